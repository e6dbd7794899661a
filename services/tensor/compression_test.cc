#include "tensor/compression.h"

#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace syncopate::tensor {
namespace {

std::vector<float> RandomValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1e-2f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

TEST(CompressionTest, ParsesTheNamesAndRefusesOthers) {
  EXPECT_EQ(ParseCompression("none")->codec, v1::CODEC_NONE);
  EXPECT_EQ(ParseCompression("bf16")->codec, v1::CODEC_BF16);
  EXPECT_EQ(ParseCompression("fp16")->codec, v1::CODEC_FP16);
  const absl::StatusOr<Compression> topk = ParseCompression("topk:0.01");
  ASSERT_TRUE(topk.ok());
  EXPECT_EQ(topk->codec, v1::CODEC_TOPK);
  EXPECT_EQ(topk->topk_ratio, 0.01);
  EXPECT_EQ(CompressionName(*topk), "topk:0.01");
  for (const char* bad : {"", "int8", "topk", "topk:", "topk:0", "topk:1.5", "topk:-1", "topk:x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseCompression(bad).status())) << bad;
  }
  // The peer-to-peer modes send whole models: in a half precision, not as top-k deltas.
  EXPECT_EQ(ParseCompression("bf16", /*peer_to_peer=*/true)->codec, v1::CODEC_BF16);
  EXPECT_EQ(ParseCompression("fp16", /*peer_to_peer=*/true)->codec, v1::CODEC_FP16);
  const absl::Status peer_topk = ParseCompression("topk:0.01", /*peer_to_peer=*/true).status();
  EXPECT_TRUE(absl::IsInvalidArgument(peer_topk));
  EXPECT_TRUE(absl::StrContains(peer_topk.message(), "use bf16 or fp16")) << peer_topk;
}

// Values a half holds come back as they were; others round to the nearest, ties to even.
TEST(CompressionTest, HalvesRoundToTheNearestAndSaturate) {
  for (float v : {0.0f, 1.0f, -2.5f, 0.15625f, 65504.0f, std::ldexp(1.0f, -24)}) {
    EXPECT_EQ(FromFp16(ToFp16(v)), v) << v;
  }
  for (float v : {0.0f, 1.0f, -2.5f, 3.0e38f, 1.0e-30f}) {
    EXPECT_NEAR(FromBf16(ToBf16(v)), v, std::fabs(v) / 128) << v;
  }
  EXPECT_EQ(FromFp16(ToFp16(1.0f + 1.0f / 2048)), 1.0f) << "a tie rounds to even";
  EXPECT_EQ(FromFp16(ToFp16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(FromFp16(ToFp16(1e6f)), 65504.0f) << "saturates: a finite delta stays finite";
  EXPECT_EQ(FromFp16(ToFp16(-1e6f)), -65504.0f);
  EXPECT_EQ(FromBf16(ToBf16(std::numeric_limits<float>::max())), FromBf16(0x7F7F)) << "saturates";
  EXPECT_EQ(FromBf16(ToBf16(1.0f + 1.0f / 256)), 1.0f) << "a tie rounds to even";
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) {  // every finite half, through float and back
    ASSERT_EQ(ToFp16(FromFp16(static_cast<uint16_t>(bits))), bits);
  }
}

TEST(CompressionTest, TopkKeepsTheLargestMagnitudes) {
  std::vector<float> values = {0.1f, -5, 0.2f, 3, -0.3f, 0, 4, -0.05f};
  Quantize({v1::CODEC_TOPK, 0.25}, values);  // ceil(0.25 x 8) = 2
  EXPECT_EQ(values, (std::vector<float>{0, -5, 0, 0, 0, 0, 4, 0}));
  std::vector<float> one = {1, 2, 3};
  Quantize({v1::CODEC_TOPK, 0.001}, one);  // at least one
  EXPECT_EQ(one, (std::vector<float>{0, 0, 3}));
}

// Error feedback: what a push leaves out comes with the next; nothing is lost or counted twice.
TEST(CompressionTest, ErrorFeedbackKeepsExactlyWhatWasNotSent) {
  for (const char* name : {"bf16", "fp16", "topk:0.1"}) {
    ErrorFeedback feedback(*ParseCompression(name));
    std::vector<float> total_in(1000, 0.0f), total_sent(1000, 0.0f);
    for (uint32_t step = 0; step < 20; ++step) {
      TensorMap delta = {{"w", RandomValues(1000, step)}};
      const std::vector<float> in = delta["w"];
      const std::vector<float> residual_before = feedback.residual().empty()
                                                     ? std::vector<float>(1000, 0.0f)
                                                     : feedback.residual().at("w");
      feedback.Compress(delta);
      const std::vector<float>& sent = delta["w"];
      const std::vector<float>& residual = feedback.residual().at("w");
      for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(sent[i] + residual[i], in[i] + residual_before[i]) << name << " at " << i;
        total_in[i] += in[i];
        total_sent[i] += sent[i];
      }
    }
    // Over many pushes the residual stays small: it is sent, not accumulated.
    const std::vector<float>& residual = feedback.residual().at("w");
    double worst = 0;
    for (float r : residual) worst = std::max(worst, std::fabs(double{r}));
    EXPECT_LT(worst, 0.2) << name;
  }
}

TEST(CompressionTest, ChunksRoundTrip) {
  const std::vector<float> values = RandomValues(300, 7);
  for (const char* name : {"bf16", "fp16", "topk:0.05"}) {
    const Compression c = *ParseCompression(name);
    std::vector<float> quantized = values;
    Quantize(c, quantized);
    std::string wire;
    EncodeChunk(c.codec, quantized.data(), quantized.size(), &wire);
    absl::StatusOr<EncodedChunk> chunk = EncodedChunk::Parse(c.codec, wire);
    ASSERT_TRUE(chunk.ok()) << name << ": " << chunk.status();
    EXPECT_EQ(chunk->elements(), values.size());
    std::vector<float> copied(values.size(), 9.0f);
    chunk->ScaledCopyTo(copied.data(), 1.0f);
    EXPECT_EQ(copied, quantized) << name << ": lossless once quantized";
    std::vector<float> added(values.size(), 1.0f);
    chunk->AddTo(added.data(), 0.5f);
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(added[i], 1.0f + 0.5f * quantized[i]);
    if (c.codec == v1::CODEC_TOPK) {
      EXPECT_LT(wire.size(), values.size() * sizeof(float) / 8);
    }
  }
}

std::string TopkWire(uint32_t span, uint32_t count, std::vector<std::pair<uint32_t, float>> pairs) {
  std::string out;
  out.append(reinterpret_cast<const char*>(&span), 4);
  out.append(reinterpret_cast<const char*>(&count), 4);
  for (const auto& [i, v] : pairs) {
    out.append(reinterpret_cast<const char*>(&i), 4);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  return out;
}

TEST(CompressionTest, BadChunksAreRefused) {
  auto refused = [](v1::Codec codec, const std::string& bytes) {
    return absl::IsInvalidArgument(EncodedChunk::Parse(codec, bytes).status());
  };
  EXPECT_TRUE(refused(v1::CODEC_BF16, "abc")) << "ragged";
  EXPECT_TRUE(refused(v1::CODEC_FP16, "")) << "empty";
  EXPECT_TRUE(refused(v1::CODEC_FP16, std::string("\x00\x7c", 2))) << "infinity";
  EXPECT_TRUE(refused(v1::CODEC_BF16, std::string("\xc0\x7f", 2))) << "NaN";
  EXPECT_TRUE(refused(v1::CODEC_NONE, "abcd")) << "not an encoded codec";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, "abc")) << "short";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(10, 2, {{1, 1.0f}}))) << "count and payload differ";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(10, 1, {{10, 1.0f}}))) << "index outside the span";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(10, 2, {{3, 1.0f}, {3, 2.0f}}))) << "repeated";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(10, 2, {{4, 1.0f}, {3, 2.0f}}))) << "descending";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(10, 1, {{2, std::nanf("")}}))) << "NaN";
  EXPECT_TRUE(refused(v1::CODEC_TOPK, TopkWire(0, 0, {}))) << "covers nothing";
  EXPECT_TRUE(EncodedChunk::Parse(v1::CODEC_TOPK, TopkWire(10, 0, {})).ok()) << "all zero";
}

}  // namespace
}  // namespace syncopate::tensor
