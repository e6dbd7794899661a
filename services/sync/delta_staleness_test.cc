#include "sync/delta_staleness.h"

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

RoundClose Close(int64_t round, std::map<TrainerId, int64_t> cuts) {
  RoundClose close;
  close.round = round;
  close.cuts = std::move(cuts);
  return close;
}

TEST(DeltaStalenessTest, ImmediateDeltasMissWhatOthersPushedSinceTheRead) {
  DeltaStaleness s(/*rounds=*/false);
  s.Joined(1, 0);
  s.Joined(2, 0);
  s.ReadLive(1, 0);
  s.ReadLive(2, 0);
  s.Pushed(1, 1);  // nothing applied since its read: 0
  s.Pushed(2, 1);  // trainer 1's delta came in since: 1
  s.ReadLive(1, 1);
  s.Pushed(1, 2);  // read after both: 0
  EXPECT_EQ(s.deltas(), 3);
  EXPECT_DOUBLE_EQ(s.Mean(), 1.0 / 3);
  EXPECT_EQ(s.Quantile(1.0), 1);
}

TEST(DeltaStalenessTest, ATrainerThatDoesNotPullDoesNotMissItsOwnDeltas) {
  DeltaStaleness s(false);
  s.Joined(1, 0);
  s.ReadLive(1, 0);
  for (int64_t clock = 1; clock <= 5; ++clock) s.Pushed(1, clock);  // never reads again
  EXPECT_EQ(s.Mean(), 0);
}

TEST(DeltaStalenessTest, ARoundAppliesItsDeltasInTheOrderTheyWerePushed) {
  // bsp with three trainers: each round's deltas are computed on the last round's snapshot, and
  // the round stands for them applied one after the other: they miss 0, 1 and 2 of each other.
  DeltaStaleness s(/*rounds=*/true);
  for (TrainerId t = 1; t <= 3; ++t) s.Joined(t, 0);
  for (int64_t round = 1; round <= 4; ++round) {
    for (TrainerId t = 1; t <= 3; ++t) {
      s.ReadRound(t, round - 1, round - 1);
      s.Pushed(t, round);
    }
    s.Closed(Close(round, {{1, round}, {2, round}, {3, round}}));
  }
  EXPECT_EQ(s.deltas(), 12);
  EXPECT_DOUBLE_EQ(s.Mean(), 1);
  EXPECT_EQ(s.Quantile(1.0), 2);
}

TEST(DeltaStalenessTest, SeveralStepsInOneRoundMissTheOthersStepsBetween) {
  // wbsp: trainer 1 takes two steps on round 0 while trainer 2 takes one between them.
  DeltaStaleness s(true);
  s.Joined(1, 0);
  s.Joined(2, 0);
  s.ReadRound(1, 0, -1);
  s.ReadRound(2, 0, -1);
  s.Pushed(1, 1);  // misses nothing
  s.Pushed(2, 1);  // misses trainer 1's first
  s.Pushed(1, 2);  // on round 0 and its own first: misses trainer 2's
  s.Closed(Close(1, {{1, 2}, {2, 1}}));
  EXPECT_EQ(s.deltas(), 3);
  EXPECT_DOUBLE_EQ(s.Mean(), 2.0 / 3);
}

TEST(DeltaStalenessTest, ADeltaComputedOnAnOlderRoundMissesTheRoundsBetween) {
  // Trainer 1 computes on round 0 while two rounds of trainer 2's close without it (a
  // straggler's delta under a mode that does not wait for it).
  DeltaStaleness s(true);
  s.Joined(1, 0);
  s.Joined(2, 0);
  s.ReadRound(1, 0, -1);
  s.ReadRound(2, 0, -1);
  s.Pushed(2, 1);
  s.Closed(Close(1, {{2, 1}}));
  s.ReadRound(2, 1, 1);
  s.Pushed(2, 2);
  s.Closed(Close(2, {{2, 2}}));
  s.Pushed(1, 1);
  s.Closed(Close(3, {{1, 1}, {2, 2}}));
  EXPECT_EQ(s.deltas(), 3);
  EXPECT_EQ(s.Quantile(1.0), 2);  // trainer 1's delta missed both of trainer 2's
  EXPECT_DOUBLE_EQ(s.Mean(), 2.0 / 3);
}

}  // namespace
}  // namespace syncopate::sync
