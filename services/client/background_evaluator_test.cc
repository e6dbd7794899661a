#include "client/background_evaluator.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

// The latest snapshot is the one evaluated: one submitted while another is evaluated replaces any
// still waiting; each accuracy goes out with the time its snapshot was taken.
TEST(BackgroundEvaluator, EvaluatesTheLatestSnapshotAndReportsWhenItWasTaken) {
  absl::Notification first_started, release_first;
  absl::Mutex mu;
  std::vector<std::pair<double, absl::Time>> reports;
  BackgroundEvaluator evaluator(
      [&](const tensor::TensorMap& model) {
        const double value = model.at("w")[0];
        if (value == 1) {
          first_started.Notify();
          release_first.WaitForNotificationWithTimeout(absl::Seconds(60));
        }
        return value / 10;
      },
      [&](double accuracy, absl::Time taken_at, absl::Duration) {
        absl::MutexLock lock(&mu);
        reports.emplace_back(accuracy, taken_at);
      },
      [] { return absl::UnixEpoch(); });
  const absl::Time t0 = absl::UnixEpoch();
  evaluator.Submit({{"w", {1}}}, t0 + absl::Seconds(1));
  ASSERT_TRUE(first_started.WaitForNotificationWithTimeout(absl::Seconds(60)));
  evaluator.Submit({{"w", {2}}}, t0 + absl::Seconds(2));  // dropped for the next
  evaluator.Submit({{"w", {3}}}, t0 + absl::Seconds(3));
  release_first.Notify();
  ASSERT_TRUE(evaluator.AwaitIdle(absl::Seconds(60)));
  absl::MutexLock lock(&mu);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_DOUBLE_EQ(reports[0].first, 0.1);
  EXPECT_EQ(reports[0].second, t0 + absl::Seconds(1));
  EXPECT_DOUBLE_EQ(reports[1].first, 0.3);
  EXPECT_EQ(reports[1].second, t0 + absl::Seconds(3));
}

TEST(BackgroundEvaluator, StopDropsWhatWaitsAndIsIdempotent) {
  int evaluated = 0;
  BackgroundEvaluator evaluator([&](const tensor::TensorMap&) { return ++evaluated, 0.5; },
                                [](double, absl::Time, absl::Duration) {},
                                [] { return absl::UnixEpoch(); });
  evaluator.Stop();
  evaluator.Submit({{"w", {1}}}, absl::UnixEpoch());
  evaluator.Stop();
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace syncopate::client
