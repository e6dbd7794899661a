#include "coordinator/progress_watch.h"

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);
const absl::Duration kTimeout = absl::Seconds(60);

// Nobody is stalled until somebody has waited for its grant longer than the timeout; then the
// trainers that hold a grant and made no progress that long are.
TEST(ProgressWatch, NamesTheTrainersThatHoldOthersUpWithoutProgress) {
  ProgressWatch watch;
  watch.Admitted(1, kT0, /*granted=*/true);
  watch.Admitted(2, kT0, /*granted=*/true);
  watch.Reported(1, kT0 + absl::Seconds(1));  // 1 awaits its grant; 2 computes
  EXPECT_TRUE(watch.Stalled(kT0 + absl::Seconds(61), kTimeout, {1, 2}).empty())
      << "1 has waited only 60 s";
  EXPECT_EQ(watch.Stalled(kT0 + absl::Seconds(62), kTimeout, {1, 2}),
            (std::vector<sync::TrainerId>{2}));
  EXPECT_TRUE(watch.Stalled(kT0 + absl::Seconds(62), absl::ZeroDuration(), {1, 2}).empty())
      << "a zero timeout: never";
}

TEST(ProgressWatch, SparesTheUngrantedAndThePausedAndRestartsProgressOnReturn) {
  ProgressWatch watch;
  watch.Admitted(1, kT0, /*granted=*/true);
  watch.Admitted(2, kT0, /*granted=*/false);  // holds no grant: cannot hold anyone up
  watch.Admitted(3, kT0, /*granted=*/true);
  watch.Reported(1, kT0);
  EXPECT_TRUE(watch.SetPaused(3, true, kT0));
  EXPECT_FALSE(watch.SetPaused(3, true, kT0)) << "no change";
  const absl::Time later = kT0 + absl::Seconds(100);
  EXPECT_TRUE(watch.Stalled(later, kTimeout, {1, 2, 3}).empty());
  EXPECT_TRUE(watch.SetPaused(3, false, later));
  EXPECT_TRUE(watch.Stalled(later + absl::Seconds(59), kTimeout, {1, 2, 3}).empty())
      << "its progress counts from its return";
  EXPECT_EQ(watch.Stalled(later + absl::Seconds(61), kTimeout, {1, 2, 3}),
            (std::vector<sync::TrainerId>{3}));
}

TEST(ProgressWatch, AGrantEndsTheWaitAndTellsItsLength) {
  ProgressWatch watch;
  watch.Admitted(1, kT0, /*granted=*/false);
  EXPECT_EQ(watch.Granted(1, kT0), std::nullopt) << "no report awaited it";
  watch.Reported(1, kT0 + absl::Seconds(1));
  EXPECT_EQ(watch.Granted(1, kT0 + absl::Seconds(3)), absl::Seconds(2));
  EXPECT_EQ(watch.Granted(1, kT0 + absl::Seconds(4)), std::nullopt);
}

TEST(ProgressWatch, AnExcusedPauseAndADepartureCountForNothing) {
  ProgressWatch watch;
  watch.Admitted(1, kT0, /*granted=*/true);
  watch.Admitted(2, kT0, /*granted=*/true);
  watch.Reported(1, kT0);
  watch.Excuse(kT0 + absl::Seconds(10), absl::Seconds(30));  // the coordinator itself was frozen
  EXPECT_TRUE(watch.Stalled(kT0 + absl::Seconds(80), kTimeout, {1, 2}).empty());
  EXPECT_EQ(watch.Stalled(kT0 + absl::Seconds(92), kTimeout, {1, 2}),
            (std::vector<sync::TrainerId>{2}));
  watch.Forget(1);  // the waiting one left: nobody is held up any more
  EXPECT_TRUE(watch.Stalled(kT0 + absl::Seconds(200), kTimeout, {2}).empty());
}

}  // namespace
}  // namespace syncopate::coordinator
