#include "tensor/tensor.h"

#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace syncopate::tensor {

TensorSpec FromProto(const v1::TensorSpec& proto) {
  return TensorSpec{proto.name(), {proto.shape().begin(), proto.shape().end()}};
}

void ToProto(const TensorSpec& spec, v1::TensorSpec* proto) {
  proto->set_name(spec.name);
  proto->mutable_shape()->Assign(spec.shape.begin(), spec.shape.end());
}

uint32_t ShardOf(std::string_view name, uint32_t shard_count) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return shard_count == 0 ? 0 : static_cast<uint32_t>(h % shard_count);
}

uint32_t ClampChunkBytes(uint32_t requested) {
  if (requested == 0) return kDefaultChunkBytes;
  if (requested < kMinChunkBytes) return kMinChunkBytes;
  if (requested > kMaxChunkBytes) return kMaxChunkBytes;
  return requested;
}

void ForEachChunkRange(size_t size, uint32_t chunk_bytes,
                       const std::function<void(size_t offset, size_t count)>& emit) {
  const size_t per_chunk = ClampChunkBytes(chunk_bytes) / sizeof(float);
  size_t offset = 0;
  do {
    const size_t n = std::min(per_chunk, size - offset);
    emit(offset, n);
    offset += n;
  } while (offset < size);
}

void ForEachChunk(const std::string& name, absl::Span<const float> values, uint32_t chunk_bytes,
                  const std::function<void(v1::TensorChunk&)>& emit) {
  v1::TensorChunk chunk;
  ForEachChunkRange(values.size(), chunk_bytes, [&](size_t offset, size_t n) {
    chunk.set_tensor(name);
    chunk.set_offset(offset);
    chunk.set_data(reinterpret_cast<const char*>(values.data() + offset), n * sizeof(float));
    emit(chunk);
  });
}

absl::Status CheckWholeFloats(std::string_view tensor, size_t bytes) {
  if (bytes % sizeof(float) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("chunk of '",
                                                 absl::string_view(tensor.data(), tensor.size()),
                                                 "' has ", bytes, " bytes, not a multiple of 4"));
}

absl::Status ChunkValues(const v1::TensorChunk& chunk, absl::Span<const float>* values) {
  if (absl::Status whole = CheckWholeFloats(chunk.tensor(), chunk.data().size()); !whole.ok()) {
    return whole;
  }
  *values = absl::Span<const float>(reinterpret_cast<const float*>(chunk.data().data()),
                                    chunk.data().size() / sizeof(float));
  return absl::OkStatus();
}

namespace {

// A float's magnitude bits: they order as its magnitude does, and reach 0x7f800000 exactly when it
// is NaN or infinite. A max over them vectorises as one integer pass.
inline uint32_t MagnitudeBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x7fffffffu;
}
constexpr uint32_t kNonFiniteBits = 0x7f800000u;

// The max passes below are also compiled for AVX2 on x86-64 and picked when the CPU has it (GCC's
// and Clang's function multiversioning). Under the baseline SSE2 an unsigned max takes several
// instructions, and the pass ran at a third of memory speed (8 against 25 GB/s over 64 MiB here).
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)  // ifuncs: ELF and glibc
#define SYNCOPATE_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SYNCOPATE_AVX2_CLONES
#endif

// The largest MagnitudeBits among `values` (0 for none).
SYNCOPATE_AVX2_CLONES uint32_t LargestMagnitudeBits(UnalignedFloats values) {
  uint32_t bits = 0;
  for (size_t i = 0; i < values.size; ++i) bits = std::max(bits, MagnitudeBits(values[i]));
  return bits;
}

// The largest MagnitudeBits of base[i] + scale * delta[i] over i < n (both hold at least n values).
SYNCOPATE_AVX2_CLONES uint32_t LargestSumMagnitudeBits(const float* __restrict base,
                                                       UnalignedFloats delta, float scale,
                                                       size_t n) {
  uint32_t bits = 0;
  for (size_t i = 0; i < n; ++i) bits = std::max(bits, MagnitudeBits(base[i] + scale * delta[i]));
  return bits;
}

#undef SYNCOPATE_AVX2_CLONES

}  // namespace

absl::Status CheckFinite(UnalignedFloats values, float* largest, size_t first) {
  // One max over the magnitude bits checks the common (all finite) case in a single integer pass
  // (a float sum would be a chain of dependent adds); the slow scan below only names the culprit.
  const uint32_t bits = LargestMagnitudeBits(values);
  if (bits < kNonFiniteBits) {
    if (largest != nullptr) std::memcpy(largest, &bits, sizeof bits);
    return absl::OkStatus();
  }
  for (size_t i = 0; i < values.size; ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("non-finite value ", values[i], " at element ", first + i));
    }
  }
  return absl::OkStatus();
}

bool ScaledSumIsFinite(absl::Span<const float> base, UnalignedFloats delta, float scale) {
  const size_t n = std::min(base.size(), delta.size);
  return LargestSumMagnitudeBits(base.data(), delta, scale, n) < kNonFiniteBits;
}

void ScaledAdd(float* __restrict dst, UnalignedFloats src, float scale) {
  // Written plainly so that it vectorises.
  if (scale == 1.0f) {
    for (size_t i = 0; i < src.size; ++i) dst[i] += src[i];
  } else {
    for (size_t i = 0; i < src.size; ++i) dst[i] += scale * src[i];
  }
}

void ScaledCopy(float* __restrict dst, UnalignedFloats src, float scale) {
  for (size_t i = 0; i < src.size; ++i) dst[i] = scale * src[i];  // vectorises, as ScaledAdd
}

void ScaleThenAdd(float* __restrict dst, absl::Span<const float> base, float scale) {
  const float* __restrict b = base.data();
  for (size_t i = 0; i < base.size(); ++i) dst[i] = scale * dst[i] + b[i];
}

ModelChecksum::ModelChecksum() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state_);
}

ModelChecksum::~ModelChecksum() { XXH3_freeState(state_); }

void ModelChecksum::Add(absl::Span<const float> values) {
  XXH3_64bits_update(state_, values.data(), values.size() * sizeof(float));
}

uint32_t ModelChecksum::value() const {
  const uint64_t h = XXH3_64bits_digest(state_);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

uint32_t Crc32(absl::Span<const float> values, uint32_t previous) {
  return Crc32(absl::string_view(reinterpret_cast<const char*>(values.data()),
                                 values.size() * sizeof(float)),
               previous);
}

uint32_t Crc32(absl::string_view bytes, uint32_t previous) {
  return static_cast<uint32_t>(
      crc32_z(previous, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

}  // namespace syncopate::tensor
