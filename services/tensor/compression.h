// Compressed deltas (docs/compression.md): a job's codec, the trainer's error feedback, and the
// wire form of one push chunk (v1::Codec), which the store validates and applies as it is, without
// expanding it into a float copy.
//
// A trainer quantizes its delta first (ErrorFeedback::Compress: each value becomes one the codec
// carries, or 0 where top-k leaves it out, and what it lost waits for the next delta), then sends
// it: the encoding of a quantized delta is lossless, so a push sent again (a retry, a re-send after
// a store restart) carries the same values.
#ifndef SYNCOPATE_TENSOR_COMPRESSION_H_
#define SYNCOPATE_TENSOR_COMPRESSION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::tensor {

struct Compression {
  v1::Codec codec = v1::CODEC_NONE;
  double topk_ratio = 1;  // CODEC_TOPK: the share of each tensor's values a push carries, (0, 1]
};

// The --compression flag's help, in every binary that takes it.
inline constexpr char kCompressionHelp[] =
    "How trainers compress what they send: none, bf16, fp16, or topk:RATIO (each push carries that "
    "share of each tensor's largest values; store modes only); what a push leaves out comes with "
    "the next. In the peer-to-peer modes the models go in bf16 or fp16 (docs/compression.md)";

// "none", "bf16", "fp16" or "topk:RATIO" (RATIO in (0, 1], e.g. topk:0.01); INVALID_ARGUMENT
// naming the choices otherwise, and for top-k in a `peer_to_peer` mode (CheckCompressionForMode).
absl::StatusOr<Compression> ParseCompression(absl::string_view text, bool peer_to_peer = false);
// The inverse: "bf16", "topk:0.01".
std::string CompressionName(const Compression& compression);
// INVALID_ARGUMENT unless `compression` is one ParseCompression gives (a known codec; a top-k
// ratio in (0, 1]).
absl::Status CheckCompression(const Compression& compression);
// INVALID_ARGUMENT for top-k in a `peer_to_peer` mode, whose trainers send whole models (each value
// in the half precision), not deltas with a residual: the one rule between codecs and modes.
absl::Status CheckCompressionForMode(const Compression& compression, bool peer_to_peer);

// The nearest bfloat16 and half-precision values, rounding to even. ToFp16 saturates a finite
// value at +-65504, so a finite delta stays finite.
uint16_t ToBf16(float value);
float FromBf16(uint16_t bits);
uint16_t ToFp16(float value);
float FromFp16(uint16_t bits);

// Makes `values` (one tensor) what `compression` carries of it: each value the nearest the codec
// holds (bf16, fp16), or, under top-k, 0 but for the ceil(ratio x size) largest magnitudes.
void Quantize(const Compression& compression, std::vector<float>& values);

// A trainer's error feedback: what its pushes left out is added to its next delta, so that no
// part of a step is lost while it trains, only delayed; a trainer that leaves sends what is still
// waiting with its last push (TakeResidual). Not thread-safe.
class ErrorFeedback {
 public:
  explicit ErrorFeedback(Compression compression) : compression_(compression) {}

  // Adds what earlier deltas left out to `delta`, quantizes it (Quantize, tensor by tensor) and
  // keeps what that left out: afterwards the new `delta` plus residual() is the old `delta` plus
  // the old residual, exactly (but for fp16's saturation, by one rounding). A no-op without
  // compression.
  void Compress(TensorMap& delta);
  // What is still to be sent, by tensor.
  const TensorMap& residual() const { return residual_; }
  // Hands over what is still to be sent, whole (not quantized), and forgets it.
  TensorMap TakeResidual() { return std::exchange(residual_, {}); }

 private:
  const Compression compression_;
  TensorMap residual_;
};

// How many elements a dense chunk of `codec` holds in `chunk_bytes` (at least 1); under top-k, how
// many elements one chunk covers (its payload is smaller).
size_t ChunkElements(v1::Codec codec, uint32_t chunk_bytes);

// Appends the wire form of values[0, n) as one chunk of `codec` (not CODEC_NONE), values already
// quantized for it (a value the codec does not hold is rounded).
void EncodeChunk(v1::Codec codec, const float* values, size_t n, std::string* out);

// A received chunk of a compressed codec, validated.
class EncodedChunk {
 public:
  // INVALID_ARGUMENT for CODEC_NONE or an unknown codec, a length that is not whole values, a
  // top-k count that does not match the payload, an index outside the span or not above the one
  // before it (a repeat), a NaN or an infinity.
  static absl::StatusOr<EncodedChunk> Parse(v1::Codec codec, std::string bytes);

  // The elements the chunk covers from its offset.
  size_t elements() const { return elements_; }
  // The largest magnitude it carries.
  float largest() const { return largest_; }
  const std::string& bytes() const { return bytes_; }

  // values[i] += scale * chunk[i] for i < elements(), `values` pointing at the chunk's first
  // element; under top-k only where the chunk carries a value.
  void AddTo(float* values, float scale) const;
  // values[i] = scale * chunk[i] (0 where a top-k chunk carries none).
  void ScaledCopyTo(float* values, float scale) const;
  // Whether values[i] + scale * chunk[i] stays finite for every i.
  bool ScaledSumIsFinite(const float* values, float scale) const;

 private:
  EncodedChunk(v1::Codec codec, std::string bytes) : codec_(codec), bytes_(std::move(bytes)) {}
  // Calls `f(i, value)` for each value the chunk carries, in order.
  template <typename F>
  void ForEachValue(F f) const;

  v1::Codec codec_;
  std::string bytes_;
  size_t elements_ = 0;
  float largest_ = 0;
};

}  // namespace syncopate::tensor

#endif  // SYNCOPATE_TENSOR_COMPRESSION_H_
