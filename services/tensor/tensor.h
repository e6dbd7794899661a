// Named float32 tensors (tensor_spec.h) as they travel between trainers and the store, and the
// rules both sides share: how a name maps to a shard, how a tensor is cut into chunks, and how a
// model is checksummed.
#ifndef SYNCOPATE_TENSOR_TENSOR_H_
#define SYNCOPATE_TENSOR_TENSOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "syncopate/v1/tensor.pb.h"
#include "tensor/tensor_spec.h"

struct XXH3_state_s;

namespace syncopate::tensor {

TensorSpec FromProto(const v1::TensorSpec& proto);
void ToProto(const TensorSpec& spec, v1::TensorSpec* proto);

// Which of `shard_count` store shards holds a tensor: FNV-1a of the name, modulo the count. Stable
// across processes, builds and restarts.
uint32_t ShardOf(std::string_view name, uint32_t shard_count);

// Default and allowed chunk sizes in bytes (1 MiB measured best on loopback; see build-facts).
inline constexpr uint32_t kDefaultChunkBytes = 1 << 20;
inline constexpr uint32_t kMinChunkBytes = 64 << 10;
inline constexpr uint32_t kMaxChunkBytes = 4 << 20;
uint32_t ClampChunkBytes(uint32_t requested);

// How a tensor of `size` floats is cut into chunks of at most `chunk_bytes` (clamped): calls
// `emit(offset, count)` once per chunk, in order. A zero-length tensor is one empty chunk.
void ForEachChunkRange(size_t size, uint32_t chunk_bytes,
                       const std::function<void(size_t offset, size_t count)>& emit);

// Calls `emit` once per chunk of `values`, in order, cut as ForEachChunkRange cuts; each chunk
// carries at most `chunk_bytes` bytes. `emit` may Swap the chunk into a message instead of copying
// it: every field is set again before each call, so the swapped-back buffer is simply reused. A
// zero-length tensor emits one empty chunk.
void ForEachChunk(const std::string& name, absl::Span<const float> values, uint32_t chunk_bytes,
                  const std::function<void(v1::TensorChunk&)>& emit);

// The float values a chunk carries; INVALID_ARGUMENT when its byte length is not a multiple of 4.
absl::Status ChunkValues(const v1::TensorChunk& chunk, absl::Span<const float>* values);

// INVALID_ARGUMENT naming the first NaN or infinity in `values`. When they are all finite and
// `largest` is given, it gets the largest magnitude among them (0 for none), from the same pass.
absl::Status CheckFinite(absl::Span<const float> values, float* largest = nullptr);

// Whether base[i] + scale * delta[i] is finite for every i (the spans have the same size): whether
// adding a finite delta would keep a finite model finite. One vectorised pass, as CheckFinite.
bool ScaledSumIsFinite(absl::Span<const float> base, absl::Span<const float> delta, float scale);

// A checksum over a model's float bytes, tensor after tensor (64-bit XXH3, folded to 32 bits):
// names a round snapshot, so that every puller can tell it got the same model. Not a defence
// against tampering. A snapshot's checksum is computed at every round's close, under the table's
// lock: zlib's CRC-32 ran at ~3 GB/s there (about a tenth of a busy store's CPU); XXH3 runs near
// memory speed.
class ModelChecksum {
 public:
  ModelChecksum();
  ~ModelChecksum();
  ModelChecksum(const ModelChecksum&) = delete;
  ModelChecksum& operator=(const ModelChecksum&) = delete;

  void Add(absl::Span<const float> values);
  uint32_t value() const;

 private:
  XXH3_state_s* state_;
};

// CRC-32 over raw float bytes, chainable: Crc32(b, Crc32(a)) is the checksum of a then b.
uint32_t Crc32(absl::Span<const float> values, uint32_t previous = 0);
// The same over any bytes (a file, a serialized message).
uint32_t Crc32(absl::string_view bytes, uint32_t previous = 0);

}  // namespace syncopate::tensor

#endif  // SYNCOPATE_TENSOR_TENSOR_H_
