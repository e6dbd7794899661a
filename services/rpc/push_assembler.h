// Collects one Push or Initialize stream into a StagedPush, validating as chunks arrive, so that a
// bad or truncated stream is rejected before anything touches the model.
#ifndef SYNCOPATE_RPC_PUSH_ASSEMBLER_H_
#define SYNCOPATE_RPC_PUSH_ASSEMBLER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/byte_buffer.h"
#include "rpc/chunk_frames.h"
#include "rpc/chunk_payload.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/compression.h"
#include "tensor/tensor.h"

namespace syncopate::rpc {

// A chunk whose payload stays where it arrived (rpc/chunk_payload.h): no copy until the apply. A
// compressed push's chunk (PushHeader.codec) is kept as it came, in its codec's form
// (tensor/compression.h), and applied from it.
struct StagedChunk {
  size_t tensor_index = 0;    // into StagedPush::tensors
  uint64_t offset = 0;        // elements
  rpc::ChunkPayload payload;  // CODEC_NONE: float32 values, a whole number of them
  std::optional<tensor::EncodedChunk> encoded;  // another codec's chunk (`payload` is empty)

  // The elements the chunk covers from `offset`.
  size_t size() const { return encoded ? encoded->elements() : payload.size(); }
  // Its payload's bytes on the wire.
  size_t bytes() const { return encoded ? encoded->bytes().size() : payload.bytes(); }
  // values[offset + i] += scale * chunk[i], read from where the chunk arrived (`values`: the
  // whole tensor's).
  void AddTo(float* values, float scale) const;
  // values[offset + i] = scale * chunk[i], the same way.
  void ScaledCopyTo(float* values, float scale) const;
  // Whether values[offset + i] + scale * chunk[i] stays finite for every i.
  bool ScaledSumIsFinite(const float* values, float scale) const;
  // Appends the payload as it came on the wire (a checkpoint keeps it so).
  void AppendPayloadTo(std::string* out) const;
};

// A complete, validated push: every tensor of the header covered exactly once by finite values.
struct StagedPush {
  v1::PushHeader header;  // tensors field cleared; see `tensors`
  std::vector<tensor::TensorSpec> tensors;
  std::vector<StagedChunk> chunks;
  uint64_t payload_bytes = 0;
  float max_magnitude = 0;  // the largest |value| the chunks carry
};

// Looks up the store's shape of a tensor; nullopt when the store does not hold it.
using SpecLookup = std::function<std::optional<tensor::TensorSpec>(const std::string&)>;

// Not thread-safe; one per stream.
class PushAssembler {
 public:
  // `lookup` is empty for Initialize streams (the header defines the tensors); for Push streams it
  // checks that every header tensor exists here with the same shape. Chunk payloads under
  // `copy_below` bytes are copied out of gRPC's slices (rpc::DecodeStreamMessage); the rest stay
  // there. Only tests and fuzzers change it.
  explicit PushAssembler(SpecLookup lookup = nullptr,
                         size_t copy_below = rpc::kCopyKeptPayloadsBelow)
      : lookup_(std::move(lookup)), copy_below_(copy_below) {}

  // Takes one stream message as it came off the wire (its chunk payload stays in gRPC's slices
  // unless under `copy_below` bytes).
  // INVALID_ARGUMENT for: bytes that protobuf would not parse, a first message that is not a
  // header, a second header, an unknown tensor (NOT_FOUND), a shape mismatch, a chunk out of order
  // or past the tensor's end, a ragged byte length, NaN or infinity, a compressed chunk its codec
  // refuses (tensor::EncodedChunk::Parse), an unknown codec, a compressed Initialize.
  absl::Status Add(const grpc::ByteBuffer& message);
  // The same for a parsed message (a checkpoint's pending push); its chunk payload is moved out.
  absl::Status Add(v1::PushMessage& message);

  // The stream's header once it was taken (null before).
  const v1::PushHeader* header() const { return have_header_ ? &push_.header : nullptr; }
  // Payload bytes of the chunks taken so far.
  uint64_t payload_bytes() const { return push_.payload_bytes; }

  // The stream ended: INVALID_ARGUMENT when it was empty or any tensor is incomplete (truncated).
  absl::StatusOr<StagedPush> Finish();

 private:
  absl::Status AddHeader(v1::PushHeader& header);
  absl::Status AddChunk(const std::string& name, uint64_t offset, rpc::ChunkPayload payload);

  SpecLookup lookup_;
  size_t copy_below_;
  bool have_header_ = false;
  StagedPush push_;
  // Tensor name -> index into push_.tensors: every check is linear in the stream's size.
  absl::flat_hash_map<std::string, size_t> index_;
  std::vector<uint64_t> filled_;  // elements received per tensor
};

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_PUSH_ASSEMBLER_H_
