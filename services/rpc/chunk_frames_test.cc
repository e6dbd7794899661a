#include "rpc/chunk_frames.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/byte_buffer_testing.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::rpc {
namespace {

using testing::Flatten;

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

}  // namespace
}  // namespace syncopate::rpc
