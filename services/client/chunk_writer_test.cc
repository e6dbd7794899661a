#include "client/chunk_writer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/byte_buffer_testing.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::client {
namespace {

// Keeps every message written, flattened; fails the write after `fail_after` messages.
class RecordingWriter final : public grpc::ClientWriterInterface<grpc::ByteBuffer> {
 public:
  bool Write(const grpc::ByteBuffer& message, grpc::WriteOptions) override {
    if (written.size() >= fail_after) return false;
    written.push_back(rpc::testing::Flatten(message));
    return true;
  }
  bool WritesDone() override { return true; }
  grpc::Status Finish() override { return grpc::Status::OK; }

  std::vector<std::string> written;
  size_t fail_after = SIZE_MAX;
};

tensor::SharedTensorMap Model() {
  tensor::TensorMap model;
  model["a"] = std::vector<float>(tensor::kMinChunkBytes / 4 + 3, 1.5f);
  model["b"] = {2.0f};
  std::vector<float>& c = model["c"];
  c.resize(2 * tensor::kMinChunkBytes / 4);
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i);
  return tensor::Share(std::move(model));
}

// What the protobuf path wrote for the same tensors: ForEachChunk's chunks as PushMessages.
std::vector<std::string> Protobuf(const tensor::TensorMap& model, uint32_t chunk_bytes) {
  std::vector<std::string> out;
  for (const auto& [name, values] : model) {
    tensor::ForEachChunk(name, values, chunk_bytes, [&](v1::TensorChunk& chunk) {
      v1::PushMessage message;
      *message.mutable_chunk() = chunk;
      out.push_back(message.SerializeAsString());
    });
  }
  return out;
}

TEST(ChunkWriterTest, WritesByteForByteWhatProtobufWrote) {
  const tensor::SharedTensorMap model = Model();
  RecordingWriter writer;
  uint64_t written = 0;
  std::vector<size_t> paced;
  ASSERT_TRUE(WriteChunks(
      writer, model, AllEntries(*model), tensor::kMinChunkBytes,
      [&](size_t bytes) {
        paced.push_back(bytes);
        return true;
      },
      &written));
  EXPECT_EQ(writer.written, Protobuf(*model, tensor::kMinChunkBytes));
  uint64_t payload = 0;
  for (const auto& [name, values] : *model) payload += values.size() * sizeof(float);
  EXPECT_EQ(written, payload);
  ASSERT_EQ(paced.size(), writer.written.size());  // asked once before each chunk
  EXPECT_EQ(paced[0], tensor::kMinChunkBytes);
  EXPECT_EQ(paced[1], 3 * sizeof(float));
}

TEST(ChunkWriterTest, WritesOnlyTheEntriesItIsGiven) {
  const tensor::SharedTensorMap model = Model();
  RecordingWriter writer;
  ASSERT_TRUE(WriteChunks(writer, model, {&*model->find("b")}, tensor::kMinChunkBytes, nullptr));
  ASSERT_EQ(writer.written.size(), 1u);
  v1::PushMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(writer.written[0]));
  EXPECT_EQ(parsed.chunk().tensor(), "b");
}

TEST(ChunkWriterTest, StopsWhenAskedOrWhenAWriteFails) {
  const tensor::SharedTensorMap model = Model();
  RecordingWriter refused;
  uint64_t written = 0;
  int asked = 0;
  EXPECT_FALSE(WriteChunks(
      refused, model, AllEntries(*model), tensor::kMinChunkBytes,
      [&](size_t) { return ++asked < 3; }, &written));
  EXPECT_EQ(refused.written.size(), 2u);  // the third chunk was refused before it went
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(written, tensor::kMinChunkBytes + 3 * sizeof(float));

  RecordingWriter broken;
  broken.fail_after = 1;
  EXPECT_FALSE(WriteChunks(broken, model, AllEntries(*model), tensor::kMinChunkBytes, nullptr));
  EXPECT_EQ(broken.written.size(), 1u);
}

}  // namespace
}  // namespace syncopate::client
