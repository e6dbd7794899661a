#include "sync/bandwidth_estimator.h"

#include <cmath>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

constexpr double kMB = 1e6;

// A link is credited with what it recently achieved: the largest sample while there are fewer than
// three, then the second largest of the last kWindow (one outlier does not lift it).
TEST(BandwidthEstimatorTest, KeepsWhatEachDirectionRecentlyAchieved) {
  BandwidthEstimator estimator({1, 1});
  ASSERT_TRUE(estimator.AddUpload(1, 10 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 10 * kMB);
  ASSERT_TRUE(estimator.AddUpload(1, 20 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 20 * kMB);
  ASSERT_TRUE(estimator.AddUpload(1, 5 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 10 * kMB) << "the second largest of three";
  EXPECT_FALSE(estimator.Measured(1));
  ASSERT_TRUE(estimator.AddDownload(1, 4 * kMB, 2).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).download, 2 * kMB);
  EXPECT_TRUE(estimator.Measured(1));
}

TEST(BandwidthEstimatorTest, FollowsALinkThatSlowsDownWithinTheWindow) {
  BandwidthEstimator estimator({1, 1});
  for (int i = 0; i < BandwidthEstimator::kWindow; ++i) {
    ASSERT_TRUE(estimator.AddDownload(1, 10 * kMB, 1).ok());
  }
  for (int i = 0; i < BandwidthEstimator::kWindow - 2; ++i) {
    ASSERT_TRUE(estimator.AddDownload(1, 2 * kMB, 1).ok());
  }
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).download, 10 * kMB) << "two fast samples still in";
  ASSERT_TRUE(estimator.AddDownload(1, 2 * kMB, 1).ok());
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).download, 2 * kMB) << "one left: an outlier";
}

TEST(BandwidthEstimatorTest, UnmeasuredTrainersGetTheMeanOrTheInitialGuess) {
  BandwidthEstimator estimator({7, 9});
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
  BandwidthEstimator estimator({1, 1});
  EXPECT_FALSE(estimator.AddUpload(1, -5, 1).ok());
  EXPECT_FALSE(estimator.AddUpload(1, 5 * kMB, 0).ok());
  EXPECT_FALSE(estimator.AddDownload(1, 5 * kMB, std::nan("")).ok());
  EXPECT_TRUE(estimator.AddUpload(1, 100, 0.001).ok());  // latency, not bandwidth
  EXPECT_DOUBLE_EQ(estimator.Estimate(1).upload, 1);
}

TEST(BandwidthEstimatorTest, RanksASlowLinkBelowTheOthers) {
  BandwidthEstimator estimator({1, 1});
  for (int round = 0; round < 10; ++round) {
    for (TrainerId t = 1; t <= 4; ++t) {
      const double rate = t == 3 ? 2.5 * kMB : 12.5 * kMB;  // 20 vs 100 Mbit/s
      ASSERT_TRUE(estimator.AddUpload(t, rate * 0.4 * (1 + 0.1 * (round % 3)), 0.4).ok());
    }
  }
  for (TrainerId t : {1, 2, 4})
    EXPECT_GT(estimator.Estimate(t).upload, estimator.Estimate(3).upload);
}

TEST(BandwidthEstimatorTest, ProvenRateIsTheBusiestWindowsBytesOverItsLength) {
  using S = StreamSample;
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({}), 0);
  // Two streams sharing the link over the same second: both count.
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({S{1, 5 * kMB, 0, 1}, S{2, 5 * kMB, 0, 1}}),
                   10 * kMB);
  // One inside the other: the inner one alone, or both over the outer span.
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({S{1, 10 * kMB, 0, 1}, S{2, 10 * kMB, 0, 2}}),
                   10 * kMB);
  // One after the other: the faster one (both together: 9 MB/s).
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({S{1, 10 * kMB, 0, 1}, S{2, 8 * kMB, 1, 1}}),
                   10 * kMB);
  // A stream that began before a window does not count in it.
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({S{1, 4 * kMB, 0, 2}, S{2, 3 * kMB, 1, 1}}),
                   3.5 * kMB);
  // Empty or malformed streams are skipped, and so is a window under kMinSampleBytes (1000 bytes
  // in 0.1 ms would be 10 MB/s).
  EXPECT_DOUBLE_EQ(
      BandwidthEstimator::ProvenRate({S{1, 1000, 0, 0.0001}, S{2, 4 * kMB, 0, 0},
                                      S{3, 4 * kMB, std::nan(""), 1}, S{4, 4 * kMB, 0, 2}}),
      (4 * kMB + 1000) / 2);
  // Small models count together: three 40 KB streams in 10 ms are one 120 KB window.
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate(
                       {S{1, 40e3, 0, 0.01}, S{2, 40e3, 0, 0.01}, S{3, 40e3, 0, 0.01}}),
                   12 * kMB);
  EXPECT_DOUBLE_EQ(BandwidthEstimator::ProvenRate({S{1, 40e3, 0, 0.01}}), 0);
}

// A receiver fed by a fast and a slow sender at once: the span of its transfers is the slow
// sender's, yet its download is the rate the fast sender's stream proved, not the bytes over that
// span.
TEST(BandwidthEstimatorTest, ASlowSenderDoesNotCapItsReceiversDownload) {
  BandwidthEstimator estimator({1, 1});
  TransferSample sample;
  // 10 MB/s from the fast sender for 0.1 s, 1 MB/s from the slow one for 0.5 s.
  sample.received_streams = {{1, 1 * kMB, 0, 0.1}, {2, 0.5 * kMB, 0, 0.5}};
  sample.received_bytes = 1.5 * kMB;
  sample.receive_seconds = 0.5;
  estimator.Observe(7, sample);
  EXPECT_DOUBLE_EQ(estimator.Estimate(7).download, 10 * kMB);
  EXPECT_LT(1.5 * kMB / 0.5, 0.5 * estimator.Estimate(7).download) << "the span's rule";
  // Rounds in which only the slow sender fed it do not pull it down.
  estimator.Observe(7, sample);
  TransferSample slow_only;
  slow_only.received_streams = {{2, 0.5 * kMB, 0, 0.5}};
  for (int i = 0; i < 3; ++i) estimator.Observe(7, slow_only);
  EXPECT_DOUBLE_EQ(estimator.Estimate(7).download, 10 * kMB);
}

// A sender whose streams go to a fast and a slow receiver: its upload is the fast stream's rate,
// not the bytes over the slow one's span.
TEST(BandwidthEstimatorTest, ASlowReceiverDoesNotCapItsSendersUpload) {
  BandwidthEstimator estimator({1, 1});
  TransferSample sample;
  sample.sent_streams = {{1, 2 * kMB, 0, 0.2}, {2, 2 * kMB, 0, 2}};
  sample.sent_bytes = 4 * kMB;
  sample.send_seconds = 2;
  estimator.Observe(7, sample);
  EXPECT_DOUBLE_EQ(estimator.Estimate(7).upload, 10 * kMB);
  // Without streams the span's rule still applies (an older trainer's report).
  TransferSample totals;
  totals.sent_bytes = 4 * kMB;
  totals.send_seconds = 2;
  estimator.Observe(8, totals);
  EXPECT_DOUBLE_EQ(estimator.Estimate(8).upload, 2 * kMB);
}

// Each ordered pair keeps its own streams' rates, from either end's report: a slow sender (2) and a
// slow receiver (3) show on their own pairs only.
TEST(BandwidthEstimatorTest, EachPairKeepsItsOwnStreamsRate) {
  BandwidthEstimator estimator({1, 1});
  TransferSample to_receivers;  // trainer 1 sends to 2 at 10 MB/s and to 3 at 1 MB/s
  to_receivers.sent_streams = {{2, 1 * kMB, 0, 0.1}, {3, 1 * kMB, 0, 1}};
  estimator.Observe(1, to_receivers);
  TransferSample from_senders;  // trainer 4 receives from 2 at 1 MB/s and from 1 at 8 MB/s
  from_senders.received_streams = {{2, 1 * kMB, 0, 1}, {1, 0.8 * kMB, 0, 0.1}};
  estimator.Observe(4, from_senders);
  using Sends = std::vector<std::pair<TrainerId, double>>;
  EXPECT_EQ(estimator.SendsOf(1), (Sends{{2, 10 * kMB}, {3, 1 * kMB}, {4, 8 * kMB}}));
  EXPECT_EQ(estimator.SendsOf(2), (Sends{{4, 1 * kMB}}));
  EXPECT_TRUE(estimator.SendsOf(3).empty());
  // The receiver's and the sender's reports of one pair are that pair's samples alike, and the
  // estimate is the fastest of the last kWindow (each is a lower bound of the path).
  TransferSample again;
  again.received_streams = {{1, 1 * kMB, 0, 0.05}};
  estimator.Observe(2, again);
  EXPECT_EQ(estimator.SendsOf(1)[0], (std::pair<TrainerId, double>{2, 20 * kMB}));
  TransferSample slower;
  slower.received_streams = {{1, 1 * kMB, 0, 0.5}};
  for (int i = 0; i < BandwidthEstimator::kWindow - 2; ++i) estimator.Observe(2, slower);
  EXPECT_EQ(estimator.SendsOf(1)[0].second, 20 * kMB);
  estimator.Observe(2, slower);  // the first sample (10 MB/s) leaves the window
  EXPECT_EQ(estimator.SendsOf(1)[0].second, 20 * kMB);
  estimator.Observe(2, slower);  // and the 20 MB/s one
  EXPECT_EQ(estimator.SendsOf(1)[0].second, 2 * kMB);
  // Tiny, empty or broken streams and streams to oneself are not samples.
  TransferSample bad;
  bad.sent_streams = {
      {5, 1000, 0, 0.001}, {6, 1 * kMB, 0, 0}, {7, 1 * kMB, 0, NAN}, {1, kMB, 0, 1}};
  estimator.Observe(1, bad);
  EXPECT_EQ(estimator.SendsOf(1).size(), 3u);
  // A trainer that leaves takes its pairs with it, both ways.
  estimator.Forget(2);
  EXPECT_EQ(estimator.SendsOf(1), (Sends{{3, 1 * kMB}, {4, 8 * kMB}}));
  EXPECT_TRUE(estimator.SendsOf(2).empty());
}

TEST(BandwidthEstimatorTest, KeepsAtMostMaxPairs) {
  BandwidthEstimator estimator({1, 1});
  TransferSample sample;
  for (TrainerId peer = 2; peer < BandwidthEstimator::kMaxPairs + 12; ++peer) {
    sample.sent_streams.push_back({peer, 1 * kMB, 0, 1});
  }
  estimator.Observe(1, sample);
  EXPECT_EQ(estimator.SendsOf(1).size(), BandwidthEstimator::kMaxPairs);
  estimator.Forget(2);  // room for one more
  TransferSample one;
  one.sent_streams = {{BandwidthEstimator::kMaxPairs + 20, 1 * kMB, 0, 1}};
  estimator.Observe(1, one);
  EXPECT_EQ(estimator.SendsOf(1).back().first, BandwidthEstimator::kMaxPairs + 20);
}

}  // namespace
}  // namespace syncopate::sync
