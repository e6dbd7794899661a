#include "store/pull_frames.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/byte_buffer_testing.h"
#include "rpc/test_pushes.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::store {
namespace {

using rpc::testing::Flatten;

std::shared_ptr<const ModelSnapshot> MakeSnapshot(
    const std::vector<std::pair<std::string, size_t>>& tensors) {
  auto s = std::make_shared<ModelSnapshot>();
  s->round = 7;
  s->live_version = 42;
  s->checksum = 0xdeadbeef;
  float next = 0.5f;
  for (const auto& [name, size] : tensors) {
    s->specs.push_back({name, {static_cast<int64_t>(size)}});
    std::vector<float> values(size);
    for (float& v : values) v = next++;
    s->values.push_back(std::make_shared<const std::vector<float>>(std::move(values)));
  }
  return s;
}

// What the protobuf path writes for the same pull: the header, then ForEachChunk's chunks.
std::vector<std::string> ProtobufMessages(const ModelSnapshot& s, uint32_t chunk_bytes) {
  std::vector<std::string> out;
  v1::PullMessage message;
  v1::PullHeader* header = message.mutable_header();
  header->set_live_version(s.live_version);
  header->set_round(s.round);
  header->set_checksum(s.checksum);
  for (const tensor::TensorSpec& spec : s.specs) tensor::ToProto(spec, header->add_tensors());
  out.push_back(message.SerializeAsString());
  for (size_t i = 0; i < s.specs.size(); ++i) {
    tensor::ForEachChunk(s.specs[i].name, s.tensor(i), chunk_bytes, [&](v1::TensorChunk& chunk) {
      *message.mutable_chunk() = chunk;
      out.push_back(message.SerializeAsString());
    });
  }
  return out;
}

TEST(PullFramesTest, EncodesByteForByteWhatProtobufWrites) {
  const std::string long_name(300, 'w');  // a two-byte length varint
  auto snapshot = MakeSnapshot({{"a", 0},
                                {"b", 1},
                                {"exact", tensor::kMinChunkBytes / 4},
                                {"over", tensor::kMinChunkBytes / 4 + 1},
                                {long_name, 3 * tensor::kMinChunkBytes / 4 + 17}});
  const std::vector<std::string> expected = ProtobufMessages(*snapshot, tensor::kMinChunkBytes);
  PullFrames frames(snapshot, tensor::kMinChunkBytes);
  std::vector<std::string> got;
  grpc::ByteBuffer message;
  while (frames.Next(&message)) got.push_back(Flatten(message));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "message " << i;
  uint64_t payload = 0;
  for (const auto& values : snapshot->values) payload += values->size() * sizeof(float);
  EXPECT_EQ(frames.bytes(), payload);
  EXPECT_FALSE(frames.Next(&message));
}

TEST(PullFramesTest, ChunkSizesAreClampedAsForEachChunkClampsThem) {
  auto snapshot = MakeSnapshot({{"t", 3'000'000}});
  for (uint32_t chunk_bytes : {0u, 1u, tensor::kMaxChunkBytes * 2}) {
    const std::vector<std::string> expected = ProtobufMessages(*snapshot, chunk_bytes);
    PullFrames frames(snapshot, chunk_bytes);
    grpc::ByteBuffer message;
    size_t i = 0;
    while (frames.Next(&message)) {
      ASSERT_LT(i, expected.size());
      EXPECT_EQ(Flatten(message), expected[i]) << chunk_bytes << " message " << i;
      ++i;
    }
    EXPECT_EQ(i, expected.size()) << chunk_bytes;
  }
}

// A pull in flight streams the model as it was when the pull began: a push meanwhile writes a copy
// of what the messages point into.
TEST(PullFramesTest, APullInFlightIsNotChangedByAPush) {
  ParameterTable table;
  table.SetMembers({{1, 1}});
  ASSERT_TRUE(
      table.Initialize(rpc::testing::Stage(rpc::testing::Header(1, 1, 0), {{"w", {1, 2}}})).ok());
  PullFrames frames(*table.Snapshot(-1), tensor::kMinChunkBytes);
  grpc::ByteBuffer header, chunk;
  ASSERT_TRUE(frames.Next(&header));
  ASSERT_TRUE(frames.Next(&chunk));
  EXPECT_FALSE(frames.Next(&header));  // the frames let the snapshot go; the chunk holds it
  ASSERT_TRUE(
      table
          .Apply(rpc::testing::Stage(rpc::testing::Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 1.0f),
                                     {{"w", {10, 10}}}))
          .ok());
  v1::PullMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(chunk)));
  ASSERT_EQ(parsed.chunk().data().size(), 2 * sizeof(float));
  const float* values = reinterpret_cast<const float*>(parsed.chunk().data().data());
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], 2.0f);
  EXPECT_EQ((*table.Snapshot(-1))->tensor(0), (std::vector<float>{11, 12}));
}

}  // namespace
}  // namespace syncopate::store
