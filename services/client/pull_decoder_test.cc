#include "client/pull_decoder.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {
namespace {

// `bytes` as a buffer of slices cut at `cuts` (offsets), as gRPC may deliver them.
grpc::ByteBuffer Buffer(const std::string& bytes, std::vector<size_t> cuts = {}) {
  std::vector<grpc::Slice> slices;
  size_t from = 0;
  cuts.push_back(bytes.size());
  for (size_t cut : cuts) {
    slices.emplace_back(bytes.data() + from, cut - from);
    from = cut;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Header(const std::vector<std::pair<std::string, int64_t>>& tensors, int64_t round = 3,
                   uint32_t checksum = 99) {
  v1::PullMessage m;
  m.mutable_header()->set_round(round);
  m.mutable_header()->set_checksum(checksum);
  for (const auto& [name, size] : tensors) {
    tensor::ToProto({name, {size}}, m.mutable_header()->add_tensors());
  }
  return m.SerializeAsString();
}

std::string Chunk(const std::string& name, uint64_t offset, const std::vector<float>& values) {
  v1::PullMessage m;
  m.mutable_chunk()->set_tensor(name);
  m.mutable_chunk()->set_offset(offset);
  m.mutable_chunk()->set_data(reinterpret_cast<const char*>(values.data()),
                              values.size() * sizeof(float));
  return m.SerializeAsString();
}

TEST(PullDecoderTest, AssemblesWhatProtobufEncodedAcrossAnySliceBoundaries) {
  std::vector<float> w(1000), b = {7, 8, 9};
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
  const std::string header = Header({{"w", 1000}, {"b", 3}});
  const std::string first = Chunk("w", 0, std::vector<float>(w.begin(), w.begin() + 600));
  const std::string second = Chunk("w", 600, std::vector<float>(w.begin() + 600, w.end()));
  const std::string bias = Chunk("b", 0, b);
  // Cut every message at every byte once: the decoder must not care where slices end.
  for (size_t cut = 0; cut <= first.size(); cut += 7) {
    PullDecoder decoder;
    ASSERT_TRUE(decoder.Add(Buffer(header, {std::min(cut, header.size())})).ok());
    ASSERT_TRUE(decoder.Add(Buffer(first, {cut})).ok()) << cut;
    EXPECT_EQ(decoder.last_payload(), 600 * sizeof(float));
    ASSERT_TRUE(decoder.Add(Buffer(second, {std::min(cut, second.size())})).ok()) << cut;
    ASSERT_TRUE(decoder.Add(Buffer(bias, {std::min(cut, bias.size())})).ok()) << cut;
    PulledModel model;
    ASSERT_TRUE(decoder.Finish(&model).ok());
    EXPECT_EQ(model.tensors["w"], w);
    EXPECT_EQ(model.tensors["b"], b);
    EXPECT_EQ(model.round, 3);
    EXPECT_EQ(model.checksums, std::vector<uint32_t>{99});
    EXPECT_EQ(model.bytes, (1000 + 3) * sizeof(float));
  }
}

TEST(PullDecoderTest, TakesChunksOutOfOrderAndLeavesZerosWhereNoneCame) {
  // Chunks come in order from every sender (the tensor then grows without being zeroed first);
  // any other order still lands each chunk at its offset.
  PullDecoder decoder;
  ASSERT_TRUE(decoder.Add(Buffer(Header({{"w", 6}, {"b", 2}, {"c", 2}}))).ok());
  ASSERT_TRUE(decoder.Add(Buffer(Chunk("w", 4, {5, 6}), {9})).ok());
  ASSERT_TRUE(decoder.Add(Buffer(Chunk("w", 0, {1, 2}), {9})).ok());
  ASSERT_TRUE(decoder.Add(Buffer(Chunk("b", 0, {7}))).ok());  // in order, then never finished
  PulledModel model;
  ASSERT_TRUE(decoder.Finish(&model).ok());
  EXPECT_EQ(model.tensors["w"], (std::vector<float>{1, 2, 0, 0, 5, 6}));
  EXPECT_EQ(model.tensors["b"], (std::vector<float>{7, 0}));
  EXPECT_EQ(model.tensors["c"], (std::vector<float>{0, 0}));
}

TEST(PullDecoderTest, ReadsFieldsInAnyOrderAndSkipsUnknownOnes) {
  PullDecoder decoder;
  ASSERT_TRUE(decoder.Add(Buffer(Header({{"w", 4}}))).ok());
  // TensorChunk with data first, an unknown varint field 9 and fixed32 field 10, then offset and
  // name: hand-encoded.
  std::string chunk;
  const float values[2] = {1.5f, -2.0f};
  chunk += '\x1a';  // data, length-delimited
  chunk += static_cast<char>(sizeof(values));
  chunk.append(reinterpret_cast<const char*>(values), sizeof(values));
  chunk += "\x48\x05";              // field 9, varint 5
  chunk += "\x55\x01\x02\x03\x04";  // field 10, fixed32
  chunk += "\x10\x02";              // offset 2
  chunk += "\x0a\x01w";             // tensor "w"
  std::string message = "\x12";
  message += static_cast<char>(chunk.size());
  message += chunk;
  ASSERT_TRUE(decoder.Add(Buffer(message, {3, 9})).ok());
  PulledModel model;
  ASSERT_TRUE(decoder.Finish(&model).ok());
  EXPECT_EQ(model.tensors["w"], (std::vector<float>{0, 0, 1.5f, -2.0f}));
}

TEST(PullDecoderTest, RefusesWhatTheProtobufPathRefused) {
  auto code = [](const std::vector<std::string>& messages) {
    PullDecoder decoder;
    for (const std::string& m : messages) {
      absl::Status s = decoder.Add(Buffer(m));
      if (!s.ok()) return s.code();
    }
    PulledModel model;
    return decoder.Finish(&model).code();
  };
  const std::string header = Header({{"w", 4}});
  EXPECT_EQ(code({}), absl::StatusCode::kDataLoss);                    // no header
  EXPECT_EQ(code({Chunk("w", 0, {1})}), absl::StatusCode::kDataLoss);  // chunk before header
  EXPECT_EQ(code({header, Chunk("x", 0, {1})}), absl::StatusCode::kDataLoss);     // unknown tensor
  EXPECT_EQ(code({header, Chunk("w", 3, {1, 2})}), absl::StatusCode::kDataLoss);  // past the end
  EXPECT_EQ(code({header, Chunk("w", ~uint64_t{0}, {1})}), absl::StatusCode::kDataLoss);
  std::string ragged = Chunk("w", 0, {1});
  v1::PullMessage m;
  ASSERT_TRUE(m.ParseFromString(ragged));
  m.mutable_chunk()->mutable_data()->push_back('x');
  EXPECT_EQ(code({header, m.SerializeAsString()}), absl::StatusCode::kInvalidArgument);
  // Malformed wire format: a truncated length, a length past the end, a bad wire type.
  EXPECT_EQ(code({header, "\x12"}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({header, std::string("\x12\x05\x0a\x01", 4)}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({header, "\x0f"}), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({header, ""}), absl::StatusCode::kDataLoss);  // neither header nor chunk
  // A well-formed stream still passes.
  EXPECT_EQ(code({header, Chunk("w", 0, {1, 2, 3, 4})}), absl::StatusCode::kOk);
}

}  // namespace
}  // namespace syncopate::client
