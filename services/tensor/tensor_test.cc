#include "tensor/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace syncopate::tensor {
namespace {

TEST(ShardOf, StableAndSpread) {
  EXPECT_EQ(ShardOf("fc1/weight", 4), ShardOf("fc1/weight", 4));
  EXPECT_EQ(ShardOf("anything", 1), 0u);
  std::vector<int> hits(4);
  for (int i = 0; i < 400; ++i) hits[ShardOf("t" + std::to_string(i), 4)]++;
  for (int h : hits) EXPECT_GT(h, 50);
}

TEST(ForEachChunk, CoversTensorExactlyOnceInOrder) {
  std::vector<float> values(300000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  std::vector<float> rebuilt;
  ForEachChunk("w", values, kMinChunkBytes, [&](const v1::TensorChunk& c) {
    EXPECT_EQ(c.offset(), rebuilt.size());
    EXPECT_LE(c.data().size(), kMinChunkBytes);
    absl::Span<const float> v;
    ASSERT_TRUE(ChunkValues(c, &v).ok());
    rebuilt.insert(rebuilt.end(), v.begin(), v.end());
  });
  EXPECT_EQ(rebuilt, values);
}

TEST(ChunkValues, RejectsRaggedBytes) {
  v1::TensorChunk chunk;
  chunk.set_data("abc");
  absl::Span<const float> v;
  EXPECT_EQ(ChunkValues(chunk, &v).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckFinite, FindsNanAndInf) {
  std::vector<float> v(1000, 1.0f);
  EXPECT_TRUE(CheckFinite(v).ok());
  v[10] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(CheckFinite(v).code(), absl::StatusCode::kInvalidArgument);
  v[10] = 0;
  v[999] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(CheckFinite(v).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckFinite, GivesTheLargestMagnitudeFromTheSamePass) {
  float largest = -1;
  EXPECT_TRUE(CheckFinite(absl::Span<const float>(), &largest).ok());
  EXPECT_EQ(largest, 0.0f);
  std::vector<float> v = {0.5f, -7.25f, 3.0f, -0.0f, 1e-30f};
  EXPECT_TRUE(CheckFinite(v, &largest).ok());
  EXPECT_EQ(largest, 7.25f);
  v.push_back(3.4e38f);
  EXPECT_TRUE(CheckFinite(v, &largest).ok());
  EXPECT_EQ(largest, 3.4e38f);
}

TEST(ScaledSumIsFinite, IsFalseExactlyWhereTheSumOverflows) {
  const std::vector<float> base = {1, -3e38f, 2};
  EXPECT_TRUE(ScaledSumIsFinite(base, std::vector<float>{1, -1e37f, 1}, 1.0f));
  EXPECT_FALSE(ScaledSumIsFinite(base, std::vector<float>{1, -1e38f, 1}, 1.0f));
  EXPECT_TRUE(ScaledSumIsFinite(base, std::vector<float>{1, -1e38f, 1}, 0.25f));
  EXPECT_FALSE(ScaledSumIsFinite(base, std::vector<float>{1, 1, 3e38f}, 2.0f));
}

TEST(CheckFinite, FindsOneBadValueAtEveryPositionAndLength) {
  // Lanes and the tail: a bad value is found wherever it sits, in lengths around the lane width.
  for (size_t n : {1, 15, 16, 17, 33, 100}) {
    for (size_t at = 0; at < n; ++at) {
      std::vector<float> v(n, -2.5f);
      EXPECT_TRUE(CheckFinite(v).ok());
      v[at] = std::numeric_limits<float>::infinity();
      EXPECT_FALSE(CheckFinite(v).ok()) << n << " " << at;
      v[at] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_FALSE(CheckFinite(v).ok()) << n << " " << at;
    }
  }
  EXPECT_TRUE(CheckFinite(absl::Span<const float>()).ok());
}

TEST(UnalignedFloats, ThePassesReadValuesAtAnyByteAddress) {
  // Values one to three bytes past a float's alignment, as they sit in a network buffer.
  std::vector<float> values(37);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 10.5f;
  for (size_t shift : {1, 2, 3}) {
    std::string buffer(shift, 'x');
    buffer.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    const UnalignedFloats src{buffer.data() + shift, values.size()};
    std::vector<float> dst(values.size(), 1.0f);
    ScaledAdd(dst.data(), src, 2.0f);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(dst[i], 1.0f + 2.0f * values[i]) << i;
    ScaledAdd(dst.data(), src, 1.0f);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(dst[i], 1.0f + 3.0f * values[i]) << i;
    std::vector<float> copied(values.size() + 1, 7.0f);
    ScaledCopy(copied.data(), src, -0.5f);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(copied[i], -0.5f * values[i]) << i;
    EXPECT_EQ(copied.back(), 7.0f);  // nothing written past src.size
    ScaleThenAdd(copied.data(), values, 2.0f);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(copied[i], 0.0f) << i;
    EXPECT_EQ(copied.back(), 7.0f);
    float largest = 0;
    EXPECT_TRUE(CheckFinite(src, &largest).ok());
    EXPECT_EQ(largest, 25.5f);
    EXPECT_TRUE(ScaledSumIsFinite(dst, src, 1.0f));
    const float inf = std::numeric_limits<float>::infinity();
    std::memcpy(buffer.data() + shift + 20 * sizeof(float), &inf, sizeof inf);
    EXPECT_EQ(CheckFinite(src).message(), "non-finite value inf at element 20");
    EXPECT_FALSE(ScaledSumIsFinite(dst, src, 1.0f));
  }
}

TEST(ModelChecksum, CoversTheBytesInOrderAndDetectsChange) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5};
  std::vector<float> ab = {1, 2, 3, 4, 5};
  auto of = [](const std::vector<std::vector<float>>& tensors) {
    ModelChecksum c;
    for (const auto& t : tensors) c.Add(t);
    return c.value();
  };
  EXPECT_EQ(of({a, b}), of({ab}));  // tensor boundaries do not matter, order does
  EXPECT_NE(of({a, b}), of({b, a}));
  std::vector<float> changed = ab;
  changed[4] = 5.0001f;
  EXPECT_NE(of({ab}), of({changed}));
  EXPECT_EQ(of({ab}), of({ab}));
}

TEST(Crc32, ChainsAndDetectsChange) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5};
  std::vector<float> ab = {1, 2, 3, 4, 5};
  EXPECT_EQ(Crc32(b, Crc32(a)), Crc32(ab));
  ab[4] = 5.0001f;
  EXPECT_NE(Crc32(b, Crc32(a)), Crc32(ab));
}

TEST(ValidateSpec, RejectsBadShapes) {
  EXPECT_TRUE(ValidateSpec({"w", {2, 3}}).ok());
  EXPECT_FALSE(ValidateSpec({"", {2}}).ok());
  EXPECT_FALSE(ValidateSpec({"w", {}}).ok());
  EXPECT_FALSE(ValidateSpec({"w", {2, 0}}).ok());
  // 2^32 x 2^32 elements do not fit in int64: no wrapped-around count may pass.
  EXPECT_FALSE(ValidateSpec({"w", {int64_t{1} << 32, int64_t{1} << 32}}).ok());
  EXPECT_EQ((TensorSpec{"w", {int64_t{1} << 31, 4}}).NumElements(), int64_t{1} << 33);
}

}  // namespace
}  // namespace syncopate::tensor
