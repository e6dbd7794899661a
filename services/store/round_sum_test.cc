#include "store/round_sum.h"

#include "gtest/gtest.h"
#include "rpc/test_pushes.h"

namespace syncopate::store {
namespace {

using rpc::testing::Header;
using rpc::testing::Stage;

constexpr double kNoLimit = 1e38;

rpc::StagedPush Push(const tensor::TensorMap& delta, float weight = 1) {
  return Stage(Header(1, 1, 0, v1::APPLY_MODE_ROUND, weight), delta);
}

TEST(RoundSumTest, AddsWeightedPushesPerTensor) {
  TensorBuffers buffers;
  RoundSum sum(kNoLimit, buffers);
  EXPECT_TRUE(sum.valid());
  sum.Add(Push({{"a", {1, 2}}, {"b", {-3}}}, 2));
  sum.Add(Push({{"a", {10, 20}}}, 0.5));
  EXPECT_EQ(sum.pushes(), 2u);
  EXPECT_DOUBLE_EQ(sum.bound(), 2 * 3 + 0.5 * 20);
  ASSERT_NE(sum.Of("a"), nullptr);
  EXPECT_EQ(*sum.Of("a"), (std::vector<float>{7, 14}));
  EXPECT_EQ(*sum.Of("b"), (std::vector<float>{-6}));
  EXPECT_EQ(sum.Of("c"), nullptr);
}

TEST(RoundSumTest, ARoundAfterResetStartsFromZero) {
  TensorBuffers buffers;
  RoundSum sum(kNoLimit, buffers);
  sum.Add(Push({{"a", {1, 2}}, {"b", {5}}}));
  sum.Reset();
  EXPECT_EQ(sum.pushes(), 0u);
  EXPECT_EQ(sum.bound(), 0);
  EXPECT_EQ(sum.Of("a"), nullptr);  // its old values are not the new round's
  // The first push of the round writes over the last round's values; the next adds to them.
  sum.Add(Push({{"a", {3, 4}}}));
  sum.Add(Push({{"a", {1, 1}}}));
  EXPECT_EQ(*sum.Of("a"), (std::vector<float>{4, 5}));
  EXPECT_EQ(sum.Of("b"), nullptr);
}

// 40,000 floats come in three chunks (64 KiB each at most), the later ones at offsets: each lands
// where it belongs, written by the first push and added to by the second.
TEST(RoundSumTest, ChunkedPushesLandAtTheirOffsets) {
  std::vector<float> big(40000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1000);
  const rpc::StagedPush first = Push({{"a", big}}, 1), second = Push({{"a", big}}, -0.5);
  ASSERT_GE(first.chunks.size(), 3u);
  TensorBuffers buffers;
  RoundSum sum(kNoLimit, buffers);
  sum.Add(first);
  sum.Add(second);
  const std::vector<float>& a = *sum.Of("a");
  ASSERT_EQ(a.size(), big.size());
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(a[i], 0.5f * big[i]) << i;
}

TEST(RoundSumTest, ATakenTensorIsWrittenAfreshByTheNextPush) {
  TensorBuffers buffers;
  RoundSum sum(kNoLimit, buffers);
  sum.Add(Push({{"a", {1, 2}}, {"b", {5}}}));
  EXPECT_EQ(*sum.Take("a"), (std::vector<float>{1, 2}));
  EXPECT_EQ(sum.Of("a"), nullptr);
  EXPECT_EQ(sum.Take("a"), nullptr);
  EXPECT_EQ(sum.Take("c"), nullptr);
  EXPECT_EQ(*sum.Of("b"), (std::vector<float>{5}));
  sum.Add(Push({{"a", {3, 4}}}, 2));
  EXPECT_EQ(*sum.Of("a"), (std::vector<float>{6, 8}));
}

TEST(RoundSumTest, AnInvalidSumHoldsAndTakesNothingUntilReset) {
  TensorBuffers buffers;
  RoundSum sum(kNoLimit, buffers);
  sum.Add(Push({{"a", {1}}}));
  sum.Invalidate();
  EXPECT_FALSE(sum.valid());
  EXPECT_EQ(sum.Of("a"), nullptr);  // its buffers are freed
  sum.Add(Push({{"a", {1}}}));
  EXPECT_EQ(sum.Of("a"), nullptr);
  sum.Reset();
  EXPECT_TRUE(sum.valid());
  sum.Add(Push({{"a", {2}}}));
  EXPECT_EQ(sum.pushes(), 1u);
  EXPECT_EQ(*sum.Of("a"), (std::vector<float>{2}));
}

TEST(RoundSumTest, APushThatWouldTakeTheBoundToTheLimitInvalidatesTheSum) {
  TensorBuffers buffers;
  RoundSum sum(/*limit=*/10, buffers);
  sum.Add(Push({{"a", {3}}}));
  EXPECT_TRUE(sum.valid());
  sum.Add(Push({{"a", {4}}}, 2));  // 3 + 8 >= 10
  EXPECT_FALSE(sum.valid());
  EXPECT_EQ(sum.Of("a"), nullptr);
}

}  // namespace
}  // namespace syncopate::store
