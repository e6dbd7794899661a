// A coordinator that restarts makes a new policy, tells it where the stores stand (Recover) and
// feeds it the trainers as they resume, each at its own clock, awaiting its grant or computing.
// The job must go on as if the old policy had never stopped: the same rounds, cuts and grants.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/policy.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

using testing::Granted;
using testing::kT0;
using testing::Make;
using testing::Rounds;

constexpr absl::Duration kWindow = absl::Seconds(10);

Decisions Resume(SyncPolicy& p, TrainerId t, int64_t clock, bool awaiting, int64_t cut,
                 absl::Time now = kT0) {
  Decisions d;
  absl::Status s = p.OnResume(Resumption{t, clock, awaiting, cut}, now, &d);
  EXPECT_TRUE(s.ok()) << s;
  return d;
}

TEST(Resume, BspClosesTheRoundTheOldCoordinatorLeftOpen) {
  auto p = Make("bsp");
  ASSERT_TRUE(p->Recover(5, 3, kWindow).ok());
  // 1 and 2 pushed clock 6 and wait; 3 computes it.
  EXPECT_TRUE(Resume(*p, 1, 6, true, 5).empty());
  EXPECT_TRUE(Resume(*p, 2, 6, true, 5).empty());
  Decisions d = Resume(*p, 3, 5, false, 5);
  EXPECT_TRUE(d.empty());  // everyone is back; round 6 still needs 3's push
  EXPECT_EQ(p->last_closed_round(), 5);
  d = *p->OnClock(3, 6, kT0);
  ASSERT_THAT(Rounds(d), ElementsAre(6));
  EXPECT_THAT(d.close_rounds[0].cuts, ElementsAre(Pair(1, 6), Pair(2, 6), Pair(3, 6)));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : d.grants) EXPECT_EQ(g.pull, PullSpec::Round(6, 6));
}

// Pipelined grants: the old coordinator granted round 6 and died before any shard closed it. The
// trainers hold their grants and pull round 6; they resume computing at clock 6, and the new
// policy closes round 6 from their clocks alone, granting nobody again.
TEST(Resume, BspClosesARoundGrantedBeforeItClosed) {
  auto p = Make("bsp");
  ASSERT_TRUE(p->pipelines_grants());
  ASSERT_TRUE(p->Recover(5, 2, kWindow).ok());
  EXPECT_TRUE(Resume(*p, 1, 6, false, 5).empty());
  Decisions d = Resume(*p, 2, 6, false, 5);
  ASSERT_THAT(Rounds(d), ElementsAre(6));
  EXPECT_THAT(d.close_rounds[0].cuts, ElementsAre(Pair(1, 6), Pair(2, 6)));
  EXPECT_THAT(Granted(d), IsEmpty());
  // Round 7 goes on as any other.
  EXPECT_TRUE(p->OnClock(1, 7, kT0)->empty());
  d = *p->OnClock(2, 7, kT0);
  EXPECT_THAT(Rounds(d), ElementsAre(7));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
}

// Only modes whose recovered policy closes such a round allow pipelined grants (hybrid counts a
// group's reports only from trainers that await their grants; wbsp and dssp are not shown to).
TEST(Resume, OnlyBspPipelinesGrants) {
  for (const char* mode :
       {"asp", "ssp", "dssp", "wbsp", "wbsp-overlap", "hybrid", "dssync", "selmcast", "orpheus"}) {
    EXPECT_FALSE(Make(mode)->pipelines_grants()) << mode;
  }
}

TEST(Resume, BspRegrantsARoundClosedBeforeTheRestart) {
  auto p = Make("bsp");
  ASSERT_TRUE(p->Recover(6, 2, kWindow).ok());
  Resume(*p, 1, 6, true, 6);
  Decisions d = Resume(*p, 2, 6, true, 6);
  EXPECT_THAT(Rounds(d), IsEmpty());  // closed already: never closed twice
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  for (const Grant& g : d.grants) EXPECT_EQ(g.pull, PullSpec::Round(6, 6));
}

TEST(Resume, DecisionsWaitForEveryoneExpectedOrTheWindow) {
  auto p = Make("bsp");
  ASSERT_TRUE(p->Recover(3, 2, kWindow).ok());
  EXPECT_TRUE(Resume(*p, 1, 4, true, 3).empty());
  EXPECT_TRUE(p->OnTick(kT0 + kWindow / 2).empty());
  Decisions d = p->OnTick(kT0 + kWindow);  // 2 never came back
  EXPECT_THAT(Rounds(d), ElementsAre(4));
  EXPECT_THAT(Granted(d), ElementsAre(1));
}

TEST(Resume, RefusesAMemberTwiceAndACutPastTheClock) {
  auto p = Make("ssp", 3);
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  Resume(*p, 1, 4, false, -1);
  Decisions d;
  EXPECT_TRUE(absl::IsFailedPrecondition(p->OnResume({1, 4, true, -1}, kT0, &d)));
  EXPECT_TRUE(absl::IsInvalidArgument(p->OnResume({2, 4, true, 5}, kT0, &d)));
  EXPECT_TRUE(absl::IsInvalidArgument(p->OnResume({2, -1, true, -1}, kT0, &d)));
  EXPECT_TRUE(d.empty());
  // A trainer that resumed computing reports its next clock, not the one it resumed at.
  EXPECT_FALSE(p->OnClock(1, 4, kT0).ok());
}

TEST(Resume, SspKeepsTheBoundAcrossTheRestart) {
  auto p = Make("ssp", 3);
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  EXPECT_TRUE(Resume(*p, 1, 10, true, -1).empty());  // 10 - 6 > 3: it waits
  EXPECT_TRUE(Resume(*p, 2, 6, false, -1).empty());
  Decisions d = *p->OnClock(2, 7, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  for (const Grant& g : d.grants) EXPECT_EQ(g.pull, PullSpec::Live());
}

TEST(Resume, DsspGrantsWithinTheLowerBound) {
  PolicyOptions options;
  options.mode = "dssp";
  options.staleness = 2;
  options.staleness_max = 6;
  auto p = Make(options);
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  Resume(*p, 1, 4, true, -1);
  Decisions d = Resume(*p, 2, 3, true, -1);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
}

TEST(Resume, WbspTakesEveryPendingPushIntoTheNextRound) {
  auto p = Make("wbsp");
  ASSERT_TRUE(p->Recover(4, 2, kWindow).ok());
  // 1 pushed up to clock 9 (round 4 took up to 7) and waits; 2 computes clock 6 (all taken).
  EXPECT_TRUE(Resume(*p, 1, 9, true, 7).empty());
  Decisions d = Resume(*p, 2, 5, false, 5);
  EXPECT_THAT(Rounds(d), IsEmpty());  // 2 has not pushed since round 4
  ASSERT_THAT(Granted(d), ElementsAre(1));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(4, 7));
  d = *p->OnClock(2, 6, kT0);
  ASSERT_THAT(Rounds(d), ElementsAre(5));
  EXPECT_THAT(d.close_rounds[0].cuts, ElementsAre(Pair(1, 9), Pair(2, 6)));
  ASSERT_THAT(Granted(d), ElementsAre(2));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(5, 6));
  d = *p->OnClock(1, 10, kT0);
  ASSERT_THAT(Granted(d), ElementsAre(1));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(5, 9));
}

TEST(Resume, HybridRegroupsEveryoneIntoOneGroup) {
  auto p = Make("hybrid");
  ASSERT_TRUE(p->Recover(10, 2, kWindow).ok());
  EXPECT_TRUE(Resume(*p, 1, 20, true, 18).empty());  // its pushes 19, 20 wait for a round
  Decisions d = Resume(*p, 2, 12, true, 12);         // its grant was lost
  ASSERT_THAT(Granted(d), ElementsAre(2));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(10, 12));
  EXPECT_EQ(p->GroupOf(1), 0);
  EXPECT_EQ(p->GroupOf(2), 0);
  d = *p->OnClock(2, 13, kT0);
  ASSERT_THAT(Rounds(d), ElementsAre(11));
  EXPECT_THAT(d.close_rounds[0].cuts, ElementsAre(Pair(1, 20), Pair(2, 13)));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
}

TEST(Resume, PeerRoundsReleaseTheNextRoundOnceAllAreBack) {
  auto p = Make("selmcast");
  ASSERT_TRUE(p->Recover(0, 3, kWindow).ok());
  // 1 and 2 reported clock 8 (round 7 released); 3 still computes clock 8.
  EXPECT_TRUE(Resume(*p, 1, 8, true, -1).empty());
  EXPECT_TRUE(Resume(*p, 2, 8, true, -1).empty());
  EXPECT_TRUE(Resume(*p, 3, 7, false, -1).empty());
  Decisions d = *p->OnClock(3, 8, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : d.grants) {
    EXPECT_EQ(g.clock, 8);
    EXPECT_EQ(g.pull, PullSpec::None());
    ASSERT_TRUE(g.exchange.has_value());
    EXPECT_EQ(g.exchange->round, 8);
  }
}

// dssync has no global barrier: each group of the round goes on once its own members are back.
TEST(Resume, DsSyncReleasesEachGroupOnceItsMembersAreBack) {
  auto p = Make("dssync");  // two groups
  ASSERT_TRUE(p->Recover(0, 3, kWindow).ok());
  // 1 and 2 reported clock 8; 3 still computes clock 8.
  EXPECT_TRUE(Resume(*p, 1, 8, true, -1).empty());
  EXPECT_TRUE(Resume(*p, 2, 8, true, -1).empty());
  Decisions d = Resume(*p, 3, 7, false, -1);  // everyone is back: the group without 3 goes on
  EXPECT_THAT(Granted(d), Not(IsEmpty())) << "no global barrier waits for 3";
  EXPECT_THAT(Granted(d), Not(Contains(3)));
  d.Append(*p->OnClock(3, 8, kT0));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : d.grants) {
    EXPECT_EQ(g.clock, 8);
    EXPECT_EQ(g.pull, PullSpec::None());
    ASSERT_TRUE(g.exchange.has_value());
    EXPECT_EQ(g.exchange->round, 8);
  }
}

// A trainer whose group went on without it (its grant was lost with the coordinator) is granted
// with what is left of its group, here alone, and keeps its model.
TEST(Resume, ADsSyncTrainerWhoseGroupWentOnIsGrantedAlone) {
  PolicyOptions options;
  options.mode = "dssync";
  options.groups = 1;  // 1 and 2 share every round's group
  auto p = Make(options);
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  Resume(*p, 1, 8, false, -1);               // got round 8's grant
  Decisions d = Resume(*p, 2, 8, true, -1);  // reported 8, its grant was lost
  ASSERT_THAT(Granted(d), ElementsAre(2));
  EXPECT_EQ(d.grants[0].clock, 8);
  EXPECT_EQ(d.grants[0].pull, PullSpec::None());
  ASSERT_TRUE(d.grants[0].exchange.has_value());
  EXPECT_TRUE(d.grants[0].exchange->send_to.empty());
}

// A coordinator that takes over a dssync job its predecessor was ending keeps the final round it
// finds at the stores: everyone goes on to it (that round one group of all), nobody past it, no
// join; it is idempotent, and another round or a mode without a final average is refused.
TEST(Resume, DsSyncFinishesTheFinalAverageItTookOver) {
  auto p = Make("dssync");  // two groups
  ASSERT_TRUE(p->Recover(0, 3, kWindow).ok());
  EXPECT_EQ(p->ResumeFinalAverage(0).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(p->ResumeFinalAverage(9).ok());
  ASSERT_TRUE(p->ResumeFinalAverage(9).ok());
  EXPECT_EQ(p->ResumeFinalAverage(10).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(p->BeginFinalAverage(), 9);
  Resume(*p, 1, 8, true, -1);
  Resume(*p, 2, 8, false, -1);
  Decisions d = Resume(*p, 3, 8, false, -1);
  Decisions joined;
  EXPECT_FALSE(p->OnJoin(4, kT0, &joined).ok());
  d.Append(*p->OnClock(2, 9, kT0));
  d.Append(*p->OnClock(3, 9, kT0));
  EXPECT_FALSE(p->OnClock(1, 10, kT0).ok()) << "1 is at 8, and nothing passes 9";
  d.Append(*p->OnClock(1, 9, kT0));
  std::vector<Grant> finals;
  for (const Grant& g : d.grants) {
    if (g.clock == 9) finals.push_back(g);
  }
  ASSERT_EQ(finals.size(), 3u);
  for (const Grant& g : finals) {
    EXPECT_TRUE(g.final_average);
    ASSERT_TRUE(g.exchange.has_value());
    EXPECT_EQ(g.exchange->send_to.size(), 2u) << "one group of everyone";
  }
  EXPECT_FALSE(p->OnClock(1, 10, kT0).ok());

  auto bsp = Make("bsp");
  ASSERT_TRUE(bsp->Recover(0, 1, kWindow).ok());
  EXPECT_EQ(bsp->ResumeFinalAverage(9).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Resume, APeerWhoseReleaseWasLostIsGrantedAloneAndKeepsItsModel) {
  auto p = Make("selmcast");
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  Resume(*p, 1, 8, false, -1);               // got round 8's release
  Decisions d = Resume(*p, 2, 8, true, -1);  // reported 8, its release was lost
  ASSERT_THAT(Granted(d), ElementsAre(2));
  EXPECT_EQ(d.grants[0].clock, 8);
  EXPECT_EQ(d.grants[0].pull, PullSpec::None());
  EXPECT_FALSE(d.grants[0].exchange.has_value());
  ASSERT_TRUE(p->OnClock(2, 9, kT0)->grants.empty());
  EXPECT_THAT(Granted(*p->OnClock(1, 9, kT0)), UnorderedElementsAre(1, 2));
}

TEST(Resume, SelMcastSspGrantsWithinTheBoundWithoutAPull) {
  PolicyOptions options;
  options.mode = "selmcast-ssp";
  options.staleness = 2;
  auto p = Make(options);
  ASSERT_TRUE(p->Recover(0, 2, kWindow).ok());
  EXPECT_TRUE(Resume(*p, 1, 9, true, -1).empty());  // 9 - 6 > 2
  EXPECT_TRUE(Resume(*p, 2, 6, false, -1).empty());
  Decisions d = *p->OnClock(2, 7, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  for (const Grant& g : d.grants) EXPECT_EQ(g.pull, PullSpec::None());
}

}  // namespace
}  // namespace syncopate::sync
