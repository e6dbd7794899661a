#include "store/pull_frames.h"

#include <algorithm>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::store {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

constexpr int kPullMessageChunk = v1::PullMessage::kChunkFieldNumber;
constexpr int kChunkTensor = v1::TensorChunk::kTensorFieldNumber;
constexpr int kChunkOffset = v1::TensorChunk::kOffsetFieldNumber;
constexpr int kChunkData = v1::TensorChunk::kDataFieldNumber;

uint32_t LengthTag(int field) {
  return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

void AppendVarint(uint64_t value, std::string* out) {
  uint8_t buffer[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, buffer);
  out->append(reinterpret_cast<const char*>(buffer), end - buffer);
}

size_t VarintSize(uint64_t value) { return CodedOutputStream::VarintSize64(value); }

void ReleaseSnapshot(void* held) {
  delete static_cast<std::shared_ptr<const ModelSnapshot>*>(held);
}

}  // namespace

grpc::ByteBuffer EncodePullChunk(const std::shared_ptr<const ModelSnapshot>& snapshot, size_t index,
                                 size_t offset, size_t count) {
  const std::string& name = snapshot->specs[index].name;
  const size_t data_bytes = count * sizeof(float);
  // TensorChunk's fields in field order; proto3 leaves out the ones at their default.
  size_t chunk_size = 0;
  if (!name.empty()) chunk_size += 1 + VarintSize(name.size()) + name.size();
  if (offset != 0) chunk_size += 1 + VarintSize(offset);
  if (data_bytes != 0) chunk_size += 1 + VarintSize(data_bytes) + data_bytes;

  std::string prefix;
  prefix.reserve(32 + name.size());
  AppendVarint(LengthTag(kPullMessageChunk), &prefix);
  AppendVarint(chunk_size, &prefix);
  if (!name.empty()) {
    AppendVarint(LengthTag(kChunkTensor), &prefix);
    AppendVarint(name.size(), &prefix);
    prefix += name;
  }
  if (offset != 0) {
    AppendVarint(WireFormatLite::MakeTag(kChunkOffset, WireFormatLite::WIRETYPE_VARINT), &prefix);
    AppendVarint(offset, &prefix);
  }
  if (data_bytes == 0) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  AppendVarint(LengthTag(kChunkData), &prefix);
  AppendVarint(data_bytes, &prefix);
  const float* data = snapshot->values[index].data() + offset;
  grpc::Slice slices[2] = {
      grpc::Slice(prefix),
      grpc::Slice(const_cast<float*>(data), data_bytes, &ReleaseSnapshot,
                  new std::shared_ptr<const ModelSnapshot>(snapshot)),
  };
  return grpc::ByteBuffer(slices, 2);
}

PullFrames::PullFrames(std::shared_ptr<const ModelSnapshot> snapshot, uint32_t chunk_bytes)
    : snapshot_(std::move(snapshot)),
      per_chunk_(tensor::ClampChunkBytes(chunk_bytes) / sizeof(float)) {}

bool PullFrames::Next(grpc::ByteBuffer* message) {
  if (!header_sent_) {
    header_sent_ = true;
    v1::PullMessage header_message;
    v1::PullHeader* header = header_message.mutable_header();
    header->set_live_version(snapshot_->live_version);
    header->set_round(snapshot_->round);
    header->set_checksum(snapshot_->checksum);
    for (const tensor::TensorSpec& spec : snapshot_->specs) {
      tensor::ToProto(spec, header->add_tensors());
    }
    grpc::Slice slice(header_message.SerializeAsString());
    *message = grpc::ByteBuffer(&slice, 1);
    return true;
  }
  if (tensor_ >= snapshot_->specs.size()) return false;
  const size_t size = snapshot_->values[tensor_].size();
  const size_t count = std::min(per_chunk_, size - offset_);
  *message = EncodePullChunk(snapshot_, tensor_, offset_, count);
  bytes_ += count * sizeof(float);
  offset_ += count;
  if (offset_ >= size) {  // a zero-length tensor sends one empty chunk, as ForEachChunk does
    ++tensor_;
    offset_ = 0;
  }
  return true;
}

}  // namespace syncopate::store
