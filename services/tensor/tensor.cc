#include "tensor/tensor.h"

#include <zlib.h>

#include <cmath>
#include <cstring>

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

void ForEachChunk(const std::string& name, absl::Span<const float> values, uint32_t chunk_bytes,
                  const std::function<void(v1::TensorChunk&)>& emit) {
  const size_t per_chunk = ClampChunkBytes(chunk_bytes) / sizeof(float);
  v1::TensorChunk chunk;
  size_t offset = 0;
  do {
    const size_t n = std::min(per_chunk, values.size() - offset);
    chunk.set_tensor(name);
    chunk.set_offset(offset);
    chunk.set_data(reinterpret_cast<const char*>(values.data() + offset), n * sizeof(float));
    emit(chunk);
    offset += n;
  } while (offset < values.size());
}

absl::Status ChunkValues(const v1::TensorChunk& chunk, absl::Span<const float>* values) {
  if (chunk.data().size() % sizeof(float) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk of '", chunk.tensor(), "' has ",
                                                   chunk.data().size(),
                                                   " bytes, not a multiple of 4"));
  }
  *values = absl::Span<const float>(reinterpret_cast<const float*>(chunk.data().data()),
                                    chunk.data().size() / sizeof(float));
  return absl::OkStatus();
}

absl::Status CheckFinite(absl::Span<const float> values) {
  // A sum is NaN if any term is NaN or terms of both infinite signs meet; it is infinite if any
  // term is. Checking the sum first keeps the common (all finite) case one vectorisable pass.
  float sum = 0;
  for (float v : values) sum += v * 0.0f;
  if (sum == 0.0f) return absl::OkStatus();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("non-finite value ", values[i], " at element ", i));
    }
  }
  return absl::OkStatus();
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
