#include "sync/bandwidth_estimator.h"

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

constexpr double kMB = 1e6;

TEST(BandwidthEstimatorTest, SmoothsSamplesPerDirection) {
  BandwidthEstimator estimator(0.5, {1, 1});
  ASSERT_TRUE(estimator.AddUpload(1, 10 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 10 * kMB);
  ASSERT_TRUE(estimator.AddUpload(1, 20 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 15 * kMB);
  EXPECT_FALSE(estimator.Measured(1));
  ASSERT_TRUE(estimator.AddDownload(1, 4 * kMB, 2).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).download, 2 * kMB);
  EXPECT_TRUE(estimator.Measured(1));
}

TEST(BandwidthEstimatorTest, UnmeasuredTrainersGetTheMeanOrTheInitialGuess) {
  BandwidthEstimator estimator(0.3, {7, 9});
  EXPECT_DOUBLE_EQ(estimator.Estimate(5).upload, 7);
  EXPECT_DOUBLE_EQ(estimator.Estimate(5).download, 9);
  ASSERT_TRUE(estimator.AddUpload(1, 10 * kMB, 1).ok());
  ASSERT_TRUE(estimator.AddUpload(2, 30 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(5).upload, 20 * kMB);
  EXPECT_DOUBLE_EQ(estimator.Estimate(5).download, 9);
  estimator.Forget(2);
  EXPECT_DOUBLE_EQ(estimator.Estimate(5).upload, 10 * kMB);
}

TEST(BandwidthEstimatorTest, RefusesBadSamplesAndIgnoresTinyOnes) {
  BandwidthEstimator estimator(0.5, {1, 1});
  EXPECT_FALSE(estimator.AddUpload(1, -5, 1).ok());
  EXPECT_FALSE(estimator.AddUpload(1, 5 * kMB, 0).ok());
  EXPECT_FALSE(estimator.AddDownload(1, 5 * kMB, std::nan("")).ok());
  EXPECT_TRUE(estimator.AddUpload(1, 100, 0.001).ok());  // latency, not bandwidth
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 1);
}

TEST(BandwidthEstimatorTest, RanksASlowLinkBelowTheOthers) {
  BandwidthEstimator estimator(0.3, {1, 1});
  for (int round = 0; round < 10; ++round) {
    for (TrainerId t = 1; t <= 4; ++t) {
      const double rate = t == 3 ? 2.5 * kMB : 12.5 * kMB;  // 20 vs 100 Mbit/s
      ASSERT_TRUE(estimator.AddUpload(t, rate * 0.4 * (1 + 0.1 * (round % 3)), 0.4).ok());
    }
  }
  for (TrainerId t : {1, 2, 4})
    EXPECT_GT(estimator.Estimate(t).upload, estimator.Estimate(3).upload);
}

}  // namespace
}  // namespace syncopate::sync
