#include "tensor/compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace syncopate::tensor {
namespace {

constexpr char kChoices[] = "none, bf16, fp16 or topk:RATIO with RATIO in (0, 1]";

// The wire is little-endian, as every host Syncopate builds for.
template <typename T>
T Load(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}
template <typename T>
void Append(T value, std::string* out) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

float Decode16(v1::Codec codec, uint16_t bits) {
  return codec == v1::CODEC_BF16 ? FromBf16(bits) : FromFp16(bits);
}

constexpr size_t kTopkHeaderBytes = 2 * sizeof(uint32_t);            // span, count
constexpr size_t kTopkPairBytes = sizeof(uint32_t) + sizeof(float);  // index, value

}  // namespace

absl::StatusOr<Compression> ParseCompression(absl::string_view text, bool peer_to_peer) {
  Compression c;
  if (text == "none") return c;
  if (text == "bf16" || text == "fp16") {
    c.codec = text == "bf16" ? v1::CODEC_BF16 : v1::CODEC_FP16;
    return c;
  }
  absl::string_view ratio = text;
  if (absl::ConsumePrefix(&ratio, "topk:") && absl::SimpleAtod(ratio, &c.topk_ratio)) {
    c.codec = v1::CODEC_TOPK;
    if (CheckCompression(c).ok()) {
      absl::Status for_mode = CheckCompressionForMode(c, peer_to_peer);
      if (!for_mode.ok()) return for_mode;
      return c;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown compression '", text, "' (", kChoices, ")"));
}

absl::Status CheckCompressionForMode(const Compression& compression, bool peer_to_peer) {
  if (!peer_to_peer || compression.codec != v1::CODEC_TOPK) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--compression=", CompressionName(compression),
      ": the peer-to-peer modes send whole models, not deltas, so there is nothing left out for "
      "a later exchange to carry: use bf16 or fp16 there"));
}

std::string CompressionName(const Compression& compression) {
  switch (compression.codec) {
    case v1::CODEC_BF16:
      return "bf16";
    case v1::CODEC_FP16:
      return "fp16";
    case v1::CODEC_TOPK:
      return absl::StrCat("topk:", compression.topk_ratio);
    default:
      return "none";
  }
}

absl::Status CheckCompression(const Compression& compression) {
  if (!v1::Codec_IsValid(compression.codec)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown codec ", compression.codec));
  }
  if (compression.codec == v1::CODEC_TOPK &&
      !(compression.topk_ratio > 0 && compression.topk_ratio <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a top-k ratio must be in (0, 1], got ", compression.topk_ratio));
  }
  return absl::OkStatus();
}

uint16_t ToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t rounded = bits + 0x7FFF + ((bits >> 16) & 1);
  // A finite value that rounds past the largest bfloat16 stays at it.
  if (std::isfinite(value) && (rounded & 0x7F800000u) == 0x7F800000u) {
    return static_cast<uint16_t>((sign >> 16) | 0x7F7F);
  }
  return static_cast<uint16_t>(rounded >> 16);
}

float FromBf16(uint16_t bits) {
  const uint32_t wide = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

uint16_t ToFp16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00;  // NaN
  // 65520 and above round past 65504, the largest half: saturate (infinity included).
  if (magnitude >= 0x477FF000u) return sign | 0x7BFF;
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, a multiple of 2^-24 (1024 of them is the smallest normal).
    return sign | static_cast<uint16_t>(std::lrint(std::fabs(value) * 16777216.0f));
  }
  // Rebias the exponent (127 -> 15) and keep the top 10 bits of the mantissa, rounding to even.
  uint32_t half = (magnitude - 0x38000000u) >> 13;
  const uint32_t rest = magnitude & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return sign | static_cast<uint16_t>(half);
}

float FromFp16(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  const uint32_t wide = exponent == 31 ? sign | 0x7F800000u | (mantissa << 13)
                                       : sign | ((exponent + 112) << 23) | (mantissa << 13);
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

void Quantize(const Compression& compression, std::vector<float>& values) {
  switch (compression.codec) {
    case v1::CODEC_BF16:
      for (float& v : values) v = FromBf16(ToBf16(v));
      return;
    case v1::CODEC_FP16:
      for (float& v : values) v = FromFp16(ToFp16(v));
      return;
    case v1::CODEC_TOPK: {
      const size_t n = values.size();
      const size_t k = std::clamp<size_t>(
          static_cast<size_t>(std::ceil(compression.topk_ratio * static_cast<double>(n))), 1, n);
      if (n == 0 || k >= n) return;
      std::vector<uint32_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      // The k largest magnitudes, ties to the lower index: the same choice on every run.
      std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                       [&](uint32_t a, uint32_t b) {
                         const float fa = std::fabs(values[a]), fb = std::fabs(values[b]);
                         return fa > fb || (fa == fb && a < b);
                       });
      for (size_t i = k; i < n; ++i) values[order[i]] = 0;
      return;
    }
    default:
      return;
  }
}

void ErrorFeedback::Compress(TensorMap& delta) {
  if (compression_.codec == v1::CODEC_NONE) return;
  for (auto& [name, values] : delta) {
    std::vector<float>& residual = residual_[name];
    residual.resize(values.size(), 0.0f);
    for (size_t i = 0; i < values.size(); ++i) values[i] += residual[i];
    std::copy(values.begin(), values.end(), residual.begin());
    Quantize(compression_, values);
    // What the quantized delta left out; exact: a value and its rounding are close enough that
    // their difference is a float (Sterbenz; but for fp16's saturation of values beyond twice
    // 65504, off by a rounding), and top-k leaves a value whole or not at all.
    for (size_t i = 0; i < values.size(); ++i) residual[i] -= values[i];
  }
}

size_t ChunkElements(v1::Codec codec, uint32_t chunk_bytes) {
  const size_t element_bytes =
      codec == v1::CODEC_BF16 || codec == v1::CODEC_FP16 ? sizeof(uint16_t) : sizeof(float);
  return std::max<size_t>(1, chunk_bytes / element_bytes);
}

void EncodeChunk(v1::Codec codec, const float* values, size_t n, std::string* out) {
  if (codec == v1::CODEC_BF16 || codec == v1::CODEC_FP16) {
    out->reserve(out->size() + n * sizeof(uint16_t));
    for (size_t i = 0; i < n; ++i) {
      Append(codec == v1::CODEC_BF16 ? ToBf16(values[i]) : ToFp16(values[i]), out);
    }
    return;
  }
  const uint32_t count =
      static_cast<uint32_t>(std::count_if(values, values + n, [](float v) { return v != 0; }));
  out->reserve(out->size() + kTopkHeaderBytes + count * kTopkPairBytes);
  Append(static_cast<uint32_t>(n), out);
  Append(count, out);
  for (size_t i = 0; i < n; ++i) {
    if (values[i] == 0) continue;
    Append(static_cast<uint32_t>(i), out);
    Append(values[i], out);
  }
}

absl::StatusOr<EncodedChunk> EncodedChunk::Parse(v1::Codec codec, std::string bytes) {
  EncodedChunk chunk(codec, std::move(bytes));
  const std::string& b = chunk.bytes_;
  switch (codec) {
    case v1::CODEC_BF16:
    case v1::CODEC_FP16:
      if (b.empty() || b.size() % sizeof(uint16_t) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("a ", codec == v1::CODEC_BF16 ? "bf16" : "fp16", " chunk of ", b.size(),
                         " bytes: not a whole number of 2-byte values"));
      }
      chunk.elements_ = b.size() / sizeof(uint16_t);
      break;
    case v1::CODEC_TOPK: {
      if (b.size() < kTopkHeaderBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("a top-k chunk of ", b.size(), " bytes: shorter than its span and count"));
      }
      const uint32_t span = Load<uint32_t>(b.data());
      const uint32_t count = Load<uint32_t>(b.data() + sizeof(uint32_t));
      if (b.size() != kTopkHeaderBytes + uint64_t{count} * kTopkPairBytes) {
        return absl::InvalidArgumentError(absl::StrCat("a top-k chunk's count ", count,
                                                       " does not match its payload of ", b.size(),
                                                       " bytes"));
      }
      if (span == 0) return absl::InvalidArgumentError("a top-k chunk that covers no element");
      int64_t last = -1;
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t index = Load<uint32_t>(b.data() + kTopkHeaderBytes + i * kTopkPairBytes);
        if (index >= span || static_cast<int64_t>(index) <= last) {
          return absl::InvalidArgumentError(
              absl::StrCat("a top-k chunk's index ", index, " is ",
                           index >= span ? absl::StrCat("outside its span of ", span)
                                         : absl::StrCat("not above the one before it, ", last)));
        }
        last = index;
      }
      chunk.elements_ = span;
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("no encoded chunks for codec ", v1::Codec_Name(codec)));
  }
  absl::Status finite;
  chunk.ForEachValue([&](size_t i, float v) {
    if (!finite.ok()) return;
    if (!std::isfinite(v)) {
      finite = absl::InvalidArgumentError(absl::StrCat("non-finite value ", v, " at element ", i));
      return;
    }
    chunk.largest_ = std::max(chunk.largest_, std::fabs(v));
  });
  if (!finite.ok()) return finite;
  return chunk;
}

template <typename F>
void EncodedChunk::ForEachValue(F f) const {
  const char* b = bytes_.data();
  if (codec_ == v1::CODEC_TOPK) {
    const uint32_t count = Load<uint32_t>(b + sizeof(uint32_t));
    for (uint32_t i = 0; i < count; ++i) {
      const char* pair = b + kTopkHeaderBytes + i * kTopkPairBytes;
      f(Load<uint32_t>(pair), Load<float>(pair + sizeof(uint32_t)));
    }
    return;
  }
  for (size_t i = 0; i < elements_; ++i) {
    f(i, Decode16(codec_, Load<uint16_t>(b + i * sizeof(uint16_t))));
  }
}

void EncodedChunk::AddTo(float* values, float scale) const {
  ForEachValue([&](size_t i, float v) { values[i] += scale * v; });
}

void EncodedChunk::ScaledCopyTo(float* values, float scale) const {
  if (codec_ == v1::CODEC_TOPK) std::fill(values, values + elements_, 0.0f);
  ForEachValue([&](size_t i, float v) { values[i] = scale * v; });
}

bool EncodedChunk::ScaledSumIsFinite(const float* values, float scale) const {
  bool finite = true;
  ForEachValue([&](size_t i, float v) { finite = finite && std::isfinite(values[i] + scale * v); });
  return finite;
}

}  // namespace syncopate::tensor
