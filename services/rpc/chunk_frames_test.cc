#include "rpc/chunk_frames.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/byte_buffer_testing.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::rpc {
namespace {

using testing::Cut;
using testing::Flatten;

std::vector<float> ValuesOf(const ChunkPayload& payload) {
  std::vector<float> out(payload.size());
  payload.CopyTo(reinterpret_cast<char*>(out.data()));
  return out;
}

// What protobuf writes for the same chunk.
std::string Protobuf(const std::string& tensor, uint64_t offset, const std::vector<float>& values) {
  v1::PushMessage message;
  message.mutable_chunk()->set_tensor(tensor);
  message.mutable_chunk()->set_offset(offset);
  message.mutable_chunk()->set_data(reinterpret_cast<const char*>(values.data()),
                                    values.size() * sizeof(float));
  return message.SerializeAsString();
}

TEST(ChunkFramesTest, EncodesByteForByteWhatProtobufWrites) {
  const std::string long_name(300, 'w');  // a two-byte length varint
  const std::vector<float> none;
  const std::vector<float> one{1.5f};
  std::vector<float> many(40'000);  // a three-byte length varint
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<float>(i) * 0.25f;
  struct Case {
    std::string tensor;
    uint64_t offset;
    const std::vector<float>* values;
  };
  for (const Case& c :
       {Case{"a", 0, &none}, Case{"b", 0, &one}, Case{"", 0, &one}, Case{"c", 1ull << 40, &many},
        Case{long_name, 129, &many}, Case{"", 0, &none}}) {
    auto owner = std::make_shared<std::vector<float>>(*c.values);
    const grpc::ByteBuffer encoded = EncodeChunkMessage(c.tensor, c.offset, *owner, owner);
    EXPECT_EQ(Flatten(encoded), Protobuf(c.tensor, c.offset, *c.values))
        << c.tensor.size() << " " << c.offset << " " << c.values->size();
  }
}

TEST(ChunkFramesTest, APayloadPointsIntoItsOwnerAndKeepsItAlive) {
  auto owner = std::make_shared<std::vector<float>>(1000);
  for (size_t i = 0; i < owner->size(); ++i) (*owner)[i] = static_cast<float>(i) + 0.5f;
  const float* data = owner->data();
  grpc::ByteBuffer chunk =
      EncodeChunkMessage("w", 10, absl::MakeConstSpan(*owner).subspan(10, 990), owner);
  std::weak_ptr<std::vector<float>> watch = owner;
  owner.reset();
  EXPECT_FALSE(watch.expired());  // the buffer holds it
  grpc::ByteBuffer copy = chunk;  // as gRPC copies a message it sends: a reference, not the bytes
  chunk.Clear();
  EXPECT_FALSE(watch.expired());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(copy.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(reinterpret_cast<const float*>(slices[1].begin()), data + 10);  // no copy
  v1::PullMessage parsed;  // a pull's chunk reads the same
  ASSERT_TRUE(parsed.ParseFromString(Flatten(copy)));
  EXPECT_EQ(parsed.chunk().tensor(), "w");
  EXPECT_EQ(parsed.chunk().offset(), 10u);
  ASSERT_EQ(parsed.chunk().data().size(), 990 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<const float*>(parsed.chunk().data().data())[0], 10.5f);
  slices.clear();
  copy.Clear();
  EXPECT_TRUE(watch.expired());
}

TEST(ChunkFramesTest, AnEmptyChunkHoldsNothing) {
  auto owner = std::make_shared<std::vector<float>>();
  std::weak_ptr<std::vector<float>> watch = owner;
  grpc::ByteBuffer chunk = EncodeChunkMessage("empty", 0, *owner, owner);
  owner.reset();
  EXPECT_TRUE(watch.expired());
  v1::PushMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(chunk)));
  EXPECT_TRUE(parsed.has_chunk());
  EXPECT_EQ(parsed.chunk().tensor(), "empty");
  EXPECT_TRUE(parsed.chunk().data().empty());
}

TEST(ChunkFramesTest, AnyOtherMessageIsItsSerialization) {
  v1::PushMessage message;
  message.mutable_header()->set_trainer_id(7);
  message.mutable_header()->set_clock(3);
  EXPECT_EQ(Flatten(EncodeMessage(message)), message.SerializeAsString());
}

TEST(ChunkFramesTest, DecodesAChunkWhereverItsSlicesAreCut) {
  std::vector<float> values(300);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 0.25f;
  const std::string wire = Protobuf("layer.w", 1234567, values);
  for (size_t first : {1, 2, 5, 9, 13, 100}) {
    for (size_t every : {1, 3, 7, 64, 4096}) {
      absl::StatusOr<StreamMessage> m = DecodeStreamMessage(Cut(wire, first, every), "push");
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(m->kind, StreamMessage::Kind::kChunk);
      EXPECT_EQ(m->tensor, "layer.w");
      EXPECT_EQ(m->offset, 1234567u);
      EXPECT_EQ(ValuesOf(m->payload), values) << first << " " << every;
    }
  }
}

TEST(ChunkFramesTest, APayloadStaysInTheReceivedBufferUnlessSmallerThanAsked) {
  for (size_t count : {size_t{16384}, size_t{16383}}) {  // 64 KiB, and a value less
    auto owner = std::make_shared<std::vector<float>>(count, 2.5f);
    const grpc::ByteBuffer encoded = EncodeChunkMessage("w", 0, *owner, owner);
    absl::StatusOr<StreamMessage> m = DecodeStreamMessage(encoded, "push", kCopyKeptPayloadsBelow);
    ASSERT_TRUE(m.ok()) << m.status();
    size_t runs = 0;
    m->payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
      ++runs;
      EXPECT_EQ(first, 0u);
      EXPECT_EQ(run.size, count);
      EXPECT_EQ(run.bytes == reinterpret_cast<const char*>(owner->data()), count == 16384) << count;
    });
    EXPECT_EQ(runs, 1u);
  }
  auto small = std::make_shared<std::vector<float>>(3, 1.0f);
  absl::StatusOr<StreamMessage> m =
      DecodeStreamMessage(EncodeChunkMessage("b", 0, *small, small), "pull");
  ASSERT_TRUE(m.ok()) << m.status();
  m->payload.ForEachRun([&](size_t, tensor::UnalignedFloats run) {
    EXPECT_EQ(run.bytes, reinterpret_cast<const char*>(small->data()));  // asked for no copy
  });
}

TEST(ChunkFramesTest, DecodesAHeaderAndTheLastOfAOneofAsProtobufDoes) {
  v1::PushMessage header;
  header.mutable_header()->set_trainer_id(7);
  header.mutable_header()->set_clock(3);
  absl::StatusOr<StreamMessage> m =
      DecodeStreamMessage(Cut(header.SerializeAsString(), 1, 1), "push");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->kind, StreamMessage::Kind::kHeader);
  v1::PushHeader parsed;
  ASSERT_TRUE(parsed.ParseFromString(m->header));
  EXPECT_EQ(parsed.trainer_id(), 7u);
  EXPECT_EQ(parsed.clock(), 3);

  // A chunk after a header: the chunk counts; unknown fields are skipped.
  const std::string both = header.SerializeAsString() + Protobuf("t", 2, {1.0f}) +
                           std::string("\x48\x05", 2);  // field 9, varint 5
  m = DecodeStreamMessage(Cut(both, 3, 5), "push");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kind, StreamMessage::Kind::kChunk);
  EXPECT_EQ(m->tensor, "t");
  EXPECT_EQ(m->offset, 2u);
  EXPECT_EQ(ValuesOf(m->payload), std::vector<float>{1.0f});

  m = DecodeStreamMessage(EncodeMessage(v1::PushMessage()), "push");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kind, StreamMessage::Kind::kNeither);
}

TEST(ChunkFramesTest, RefusesWhatProtobufRefusesAndNeverReadsPastTheMessage) {
  const std::string wire = Protobuf("w", 5, {1.0f, 2.0f, 3.0f});
  v1::PushMessage check;
  // Every truncation of the message: a cut inside a field is refused, as protobuf refuses it.
  for (size_t n = 1; n < wire.size(); ++n) {
    const std::string part = wire.substr(0, n);
    absl::StatusOr<StreamMessage> m = DecodeStreamMessage(Cut(part, 1, 2), "pull");
    EXPECT_EQ(m.ok(), check.ParseFromString(part)) << n;
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(m.status().message().find("malformed pull message"), std::string::npos)
          << m.status();
    }
  }
  // A length that runs past the end, a bad wire type, a zero tag.
  for (const std::string& bad :
       {std::string("\x12\x7f\x0a", 3), std::string("\x17", 1), std::string("\x00\x01", 2)}) {
    absl::StatusOr<StreamMessage> m = DecodeStreamMessage(Cut(bad, 1, 1), "push");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << m.status();
    EXPECT_FALSE(check.ParseFromString(bad));
  }
}

}  // namespace
}  // namespace syncopate::rpc
