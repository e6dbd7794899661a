#include "rpc/chunk_frames.h"

#include <string>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::rpc {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

constexpr int kMessageChunk = v1::PushMessage::kChunkFieldNumber;
static_assert(v1::PullMessage::kChunkFieldNumber == kMessageChunk,
              "Push and Pull messages carry a chunk under the same field");
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

// gRPC's slice takes a C callback and one pointer: the owner's reference travels as a heap-held
// shared_ptr, the one raw new/delete pair here.
void ReleaseOwner(void* held) { delete static_cast<std::shared_ptr<const void>*>(held); }

}  // namespace

grpc::ByteBuffer EncodeChunkMessage(std::string_view tensor, uint64_t offset,
                                    absl::Span<const float> values,
                                    std::shared_ptr<const void> owner) {
  const size_t data_bytes = values.size() * sizeof(float);
  // TensorChunk's fields in field order; proto3 leaves out the ones at their default.
  size_t chunk_size = 0;
  if (!tensor.empty()) chunk_size += 1 + VarintSize(tensor.size()) + tensor.size();
  if (offset != 0) chunk_size += 1 + VarintSize(offset);
  if (data_bytes != 0) chunk_size += 1 + VarintSize(data_bytes) + data_bytes;

  std::string prefix;
  prefix.reserve(32 + tensor.size());
  AppendVarint(LengthTag(kMessageChunk), &prefix);
  AppendVarint(chunk_size, &prefix);
  if (!tensor.empty()) {
    AppendVarint(LengthTag(kChunkTensor), &prefix);
    AppendVarint(tensor.size(), &prefix);
    prefix.append(tensor);
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
  grpc::Slice slices[2] = {
      grpc::Slice(prefix),
      grpc::Slice(const_cast<float*>(values.data()), data_bytes, &ReleaseOwner,
                  new std::shared_ptr<const void>(std::move(owner))),
  };
  return grpc::ByteBuffer(slices, 2);
}

grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace syncopate::rpc
