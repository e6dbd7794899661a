// libFuzzer target: the tensor rules every stream goes through (tensor/tensor.h) - a tensor spec
// from the wire and its shape arithmetic, a chunk's values, the finite checks, cutting a tensor
// into chunks, the shard of a name. Input: a serialized v1::TensorSpec, then a serialized
// v1::TensorChunk, each after a 16-bit length (InputReader), then a chunk size. Beyond not
// crashing: the element count is the exact product or 0, and what the functions promise holds.

#include <cmath>
#include <cstring>

#include "fuzz_input.h"
#include "tensor/tensor.h"

namespace syncopate::fuzz {
namespace {

// The product of the dimensions, or 0 when one is below 1 or the product overflows int64.
int64_t ExactElements(const std::vector<int64_t>& shape) {
  if (shape.empty()) return 0;
  int64_t product = 1;
  for (int64_t dim : shape) {
    if (dim < 1 || __builtin_mul_overflow(product, dim, &product)) return 0;
  }
  return product;
}

void CheckSpec(const std::string& bytes) {
  v1::TensorSpec proto;
  if (!proto.ParseFromString(bytes)) return;
  const tensor::TensorSpec spec = tensor::FromProto(proto);
  Require(spec.NumElements() == ExactElements(spec.shape), "NumElements is exact or 0");
  if (tensor::ValidateSpec(spec).ok()) {
    Require(!spec.name.empty() && spec.NumElements() > 0, "a valid spec has a name and values");
  }
  for (uint32_t shards : {1u, 3u, 64u}) {
    Require(tensor::ShardOf(spec.name, shards) < shards, "a name maps to an existing shard");
  }
}

void CheckChunk(const std::string& bytes, uint32_t chunk_bytes) {
  v1::TensorChunk chunk;
  if (!chunk.ParseFromString(bytes)) return;
  absl::Span<const float> values;
  if (!tensor::ChunkValues(chunk, &values).ok()) {
    Require(chunk.data().size() % sizeof(float) != 0, "only a ragged chunk is refused");
    return;
  }
  Require(values.size() * sizeof(float) == chunk.data().size(), "a chunk's values are its bytes");
  float largest = -1;
  const bool finite = tensor::CheckFinite(values, &largest).ok();
  float expected = 0;
  bool all_finite = true;
  for (float v : values) {
    all_finite = all_finite && std::isfinite(v);
    if (std::isfinite(v)) expected = std::max(expected, std::fabs(v));
  }
  Require(finite == all_finite, "CheckFinite finds every NaN and infinity");
  if (finite) Require(largest == expected, "CheckFinite gives the largest magnitude");
  if (finite) {
    Require(tensor::ScaledSumIsFinite(values, values, 0.0f), "adding nothing stays finite");
  }
  // Cut into chunks and put back together, the values come back bit for bit.
  std::string joined;
  uint32_t pieces = 0;
  tensor::ForEachChunk(
      chunk.tensor(), values, tensor::ClampChunkBytes(chunk_bytes), [&](v1::TensorChunk& piece) {
        Require(piece.offset() * sizeof(float) == joined.size(), "chunks follow each other");
        Require(piece.data().size() <= tensor::kMaxChunkBytes, "no chunk is larger than allowed");
        joined += piece.data();
        ++pieces;
      });
  Require(pieces > 0 && joined == chunk.data(), "chunks put back together give the tensor");
  Require(tensor::Crc32(values) == tensor::Crc32(absl::string_view(chunk.data())),
          "the checksum of floats is the checksum of their bytes");
}

}  // namespace
}  // namespace syncopate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  syncopate::fuzz::InputReader input(data, size);
  const std::string spec = input.LongString();
  const std::string chunk = input.LongString();
  const uint32_t chunk_bytes = input.Uint16() * 64u;
  syncopate::fuzz::CheckSpec(spec);
  syncopate::fuzz::CheckChunk(chunk, chunk_bytes);
  return 0;
}
