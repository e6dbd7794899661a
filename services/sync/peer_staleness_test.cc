#include "sync/peer_staleness.h"

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

TEST(PeerStalenessTest, AllToAllRoundsCountAsBspDoes) {
  // Three trainers average everyone's model before each step, then step in the order 1, 2, 3:
  // the round's steps miss 0, 1 and 2 of each other, as a bsp round's deltas do.
  PeerStaleness s;
  for (TrainerId t = 1; t <= 3; ++t) s.Joined(t, 0);
  for (int64_t round = 1; round <= 4; ++round) {
    for (TrainerId t = 1; t <= 3; ++t) s.Averaged(t, {1, 2, 3});
    for (TrainerId t = 1; t <= 3; ++t) s.Stepped(t, round);
  }
  EXPECT_EQ(s.steps(), 12);
  EXPECT_DOUBLE_EQ(s.Mean(), 1);
  EXPECT_EQ(s.Quantile(1.0), 2);
}

TEST(PeerStalenessTest, StepsOfTrainersNeverAveragedWithAreMissedUntilTheyArrive) {
  // Trainers 1 and 2 average with each other; trainer 3 trains alone for three steps, then sends
  // its model to trainer 1 only.
  PeerStaleness s;
  for (TrainerId t = 1; t <= 3; ++t) s.Joined(t, 0);
  for (int64_t round = 1; round <= 3; ++round) {
    s.Stepped(3, round);
    s.Averaged(1, {2});
    s.Averaged(2, {1});
    s.Stepped(1, round);  // misses trainer 3's `round` steps
    s.Stepped(2, round);  // and trainer 1's step of this round
  }
  // Trainer 3: 0, 2, 4 (the others' earlier steps); trainer 1: 1, 2, 3; trainer 2: 2, 3, 4.
  EXPECT_DOUBLE_EQ(s.Mean(), 21.0 / 9);
  s.Averaged(1, {2, 3});
  s.Stepped(1, 4);  // holds everything done before it: 0
  EXPECT_DOUBLE_EQ(s.Mean(), 21.0 / 10);
}

TEST(PeerStalenessTest, AModelIsSentAsItWasAtItsSendersLastStep) {
  // Trainer 2 averages trainer 3's model in after its step; trainer 1 then averages in trainer
  // 2's model of that step, which does not hold trainer 3's.
  PeerStaleness s;
  for (TrainerId t = 1; t <= 3; ++t) s.Joined(t, 0);
  s.Stepped(3, 1);
  s.Stepped(2, 1);  // misses trainer 3's step: 1
  s.Averaged(2, {3});
  s.Averaged(1, {2});
  s.Stepped(1, 1);  // holds trainer 2's step, not trainer 3's: 1
  EXPECT_DOUBLE_EQ(s.Mean(), 2.0 / 3);
}

TEST(PeerStalenessTest, ANewcomersClocksBeforeItJoinedAreNoSteps) {
  // Trainer 2 joins at clock 10 and averages trainer 1's model in: trainer 1 misses none of its
  // first 10 clocks, only the step it took since.
  PeerStaleness s;
  s.Joined(1, 0);
  for (int64_t clock = 1; clock <= 10; ++clock) s.Stepped(1, clock);
  s.Joined(2, 10);
  s.Averaged(2, {1});
  s.Stepped(2, 11);  // holds all of trainer 1's: 0
  s.Stepped(1, 11);  // misses trainer 2's one step: 1
  EXPECT_EQ(s.steps(), 12);
  EXPECT_DOUBLE_EQ(s.Mean(), 1.0 / 12);
  EXPECT_EQ(s.Quantile(1.0), 1);
}

TEST(PeerStalenessTest, AMulticastIsAveragedInOnceItArrived) {
  // Trainer 1 multicasts the model of its first step to trainer 2, arriving at 10 s; trainer 2
  // steps before (missing it) and after (holding it).
  const absl::Time t0 = absl::UnixEpoch();
  PeerStaleness s;
  s.Joined(1, 0);
  s.Joined(2, 0);
  s.Stepped(1, 1);
  s.Sent(1, {2}, t0 + absl::Seconds(10));
  s.Stepped(1, 2);  // misses nothing: trainer 2 has taken no step
  s.Received(2, t0 + absl::Seconds(5));
  s.Stepped(2, 1);  // misses trainer 1's 2 steps
  s.Received(2, t0 + absl::Seconds(10));
  s.Stepped(2, 2);  // holds trainer 1's first step, not its second: 1
  EXPECT_DOUBLE_EQ(s.Mean(), 3.0 / 4);
}

TEST(PeerStalenessTest, UnknownSendersAndItselfAreIgnored) {
  PeerStaleness s;
  s.Joined(1, 0);
  s.Averaged(1, {0, 1, 7});
  s.Stepped(1, 1);
  EXPECT_EQ(s.Mean(), 0);
}

}  // namespace
}  // namespace syncopate::sync
