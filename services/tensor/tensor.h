// Named float32 tensors (tensor_spec.h) as they travel between trainers and the store, and the
// rules both sides share: how a name maps to a shard, how a tensor is cut into chunks, and how a
// model is checksummed.
#ifndef SYNCOPATE_TENSOR_TENSOR_H_
#define SYNCOPATE_TENSOR_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
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

// INVALID_ARGUMENT when a chunk of `tensor` carrying `bytes` bytes does not hold whole floats.
absl::Status CheckWholeFloats(std::string_view tensor, size_t bytes);

// The float values a chunk carries; INVALID_ARGUMENT when its byte length is not a multiple of 4.
absl::Status ChunkValues(const v1::TensorChunk& chunk, absl::Span<const float>* values);

// `size` float32 values stored at `bytes`, at any address: a network buffer's, where a value need
// not be aligned. Read with unaligned loads, which the passes below vectorise as they do aligned
// ones; a Span converts with Of.
struct UnalignedFloats {
  // Reads the values in order, for std::copy and std::vector::insert (which then copy in one
  // counted, vectorised loop). Only the operations those use.
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = float;
    using difference_type = std::ptrdiff_t;
    using pointer = const float*;
    using reference = float;

    explicit Iterator(const char* at) : at_(at) {}
    float operator*() const {
      float value;
      std::memcpy(&value, at_, sizeof value);
      return value;
    }
    Iterator& operator++() {
      at_ += sizeof(float);
      return *this;
    }
    Iterator& operator--() {
      at_ -= sizeof(float);
      return *this;
    }
    Iterator& operator+=(difference_type n) {
      at_ += n * static_cast<difference_type>(sizeof(float));
      return *this;
    }
    difference_type operator-(const Iterator& other) const {
      return (at_ - other.at_) / static_cast<difference_type>(sizeof(float));
    }
    bool operator==(const Iterator& other) const { return at_ == other.at_; }
    bool operator!=(const Iterator& other) const { return at_ != other.at_; }

   private:
    const char* at_;
  };

  const char* bytes = nullptr;
  size_t size = 0;

  static UnalignedFloats Of(absl::Span<const float> values) {
    return {reinterpret_cast<const char*>(values.data()), values.size()};
  }
  float operator[](size_t i) const {
    float value;
    std::memcpy(&value, bytes + i * sizeof(float), sizeof value);
    return value;
  }
  Iterator begin() const { return Iterator(bytes); }
  Iterator end() const { return Iterator(bytes + size * sizeof(float)); }
};

// INVALID_ARGUMENT naming the first NaN or infinity in `values` (by its index in `values`, plus
// `first`: where values[0] sits in a larger whole). When they are all finite and `largest` is
// given, it gets the largest magnitude among them (0 for none), from the same pass.
absl::Status CheckFinite(UnalignedFloats values, float* largest = nullptr, size_t first = 0);
inline absl::Status CheckFinite(absl::Span<const float> values, float* largest = nullptr) {
  return CheckFinite(UnalignedFloats::Of(values), largest);
}

// Whether base[i] + scale * delta[i] is finite for every i (base has delta's size): whether adding
// a finite delta would keep a finite model finite. One vectorised pass, as CheckFinite.
bool ScaledSumIsFinite(absl::Span<const float> base, UnalignedFloats delta, float scale);
inline bool ScaledSumIsFinite(absl::Span<const float> base, absl::Span<const float> delta,
                              float scale) {
  return ScaledSumIsFinite(base.subspan(0, delta.size()),
                           UnalignedFloats::Of(delta.subspan(0, base.size())), scale);
}

// dst[i] += scale * src[i] for the src.size elements of src (dst must not overlap it).
void ScaledAdd(float* dst, UnalignedFloats src, float scale);
// dst[i] = scale * src[i] for the src.size elements of src (dst must not overlap it).
void ScaledCopy(float* dst, UnalignedFloats src, float scale);
// dst[i] = scale * dst[i] + base[i] for the base.size() elements of base (dst must not overlap it).
void ScaleThenAdd(float* dst, absl::Span<const float> base, float scale);

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
