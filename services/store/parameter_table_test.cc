#include "store/parameter_table.h"

#include <cmath>

#include "gtest/gtest.h"
#include "rpc/test_pushes.h"

namespace syncopate::store {
namespace {

using rpc::testing::Header;
using rpc::testing::Stage;

std::vector<float> Live(const ParameterTable& t, const std::string& name) {
  auto s = *t.Snapshot(-1);
  for (size_t i = 0; i < s->specs.size(); ++i) {
    if (s->specs[i].name == name) return s->tensor(i);
  }
  return {};
}

class ParameterTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_.SetMembers({{1, 1}, {2, 1}});
    ASSERT_TRUE(table_.Initialize(Stage(Header(1, 1, 0), {{"a", {1, 2}}, {"b", {10}}})).ok());
  }
  ParameterTable table_;
};

TEST_F(ParameterTableTest, InitializeIsIdempotentAndChecksShapes) {
  auto again = table_.Initialize(Stage(Header(2, 1, 0), {{"a", {7, 7}}}));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_initialized);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{1, 2}));
  EXPECT_EQ(table_.Initialize(Stage(Header(2, 1, 0), {{"a", {1, 2, 3}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.last_closed_round(), 0);
}

TEST_F(ParameterTableTest, ImmediatePushAppliesWeightedDelta) {
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 0.5f), {{"a", {2, 4}}})).ok());
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 4}));
}

// Snapshots share the live model's values (no copy per pull or checkpoint); a push writes a copy
// of a tensor a snapshot holds, so every snapshot keeps what it had.
TEST_F(ParameterTableTest, SnapshotsShareValuesAndKeepThemWhilePushesChangeTheModel) {
  std::shared_ptr<const ModelSnapshot> first = *table_.Snapshot(-1);
  std::shared_ptr<const ModelSnapshot> second = *table_.Snapshot(-1);
  ASSERT_EQ(first->specs[0].name, "a");
  EXPECT_EQ(first->values[0].get(), second->values[0].get()) << "shared, not copied";
  EXPECT_EQ(first->values[0].get(), (*table_.Snapshot(0))->values[0].get()) << "the round too";
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}})).ok());
  EXPECT_EQ(first->tensor(0), (std::vector<float>{1, 2}));  // unchanged
  EXPECT_EQ((*table_.Snapshot(0))->tensor(0), (std::vector<float>{1, 2}));
  std::shared_ptr<const ModelSnapshot> after = *table_.Snapshot(-1);
  EXPECT_EQ(after->tensor(0), (std::vector<float>{2, 3}));
  EXPECT_NE(after->values[0].get(), first->values[0].get());
  EXPECT_EQ(after->values[1].get(), first->values[1].get()) << "the tensor no push changed";
}

// Once no snapshot holds a tensor, pushes change it in place: a copy would have been made while
// the old values still existed, at another address.
TEST_F(ParameterTableTest, APushWritesInPlaceWhenNoSnapshotHoldsTheValues) {
  // The first push copies "a" away from round 0's snapshot, which Initialize published.
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}})).ok());
  const float* held = (*table_.Snapshot(-1))->tensor(0).data();  // the snapshot is let go at once
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 2, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}})).ok());
  std::shared_ptr<const ModelSnapshot> now = *table_.Snapshot(-1);
  EXPECT_EQ(now->tensor(0).data(), held);
  EXPECT_EQ(now->tensor(0), (std::vector<float>{3, 4}));
  EXPECT_EQ((*table_.Snapshot(0))->tensor(0), (std::vector<float>{1, 2}));
}

// A buffer nothing holds any more comes back to the table, pages and all, and the next copy on
// write of its size takes it (TensorBuffers): in steady state a push touches no fresh memory.
TEST_F(ParameterTableTest, ACopyOnWriteTakesABufferLetGoBefore) {
  auto push = [&](uint64_t sequence) {
    return table_.Apply(
        Stage(Header(1, 1, sequence, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}}));
  };
  ASSERT_TRUE(push(1).ok());  // copies "a" away from round 0's snapshot, which keeps the first
  EXPECT_EQ(table_.kept_buffer_bytes(), 0u);
  std::shared_ptr<const ModelSnapshot> cut = *table_.Snapshot(-1);  // as a checkpoint's
  const float* second = cut->tensor(0).data();
  ASSERT_TRUE(push(2).ok());  // a third buffer: none was kept
  cut.reset();
  EXPECT_EQ(table_.kept_buffer_bytes(), 2 * sizeof(float)) << "the second came back";
  cut = *table_.Snapshot(-1);
  ASSERT_TRUE(push(3).ok());
  EXPECT_EQ(table_.kept_buffer_bytes(), 0u);
  EXPECT_EQ((*table_.Snapshot(-1))->tensor(0).data(), second) << "the copy took the kept buffer";
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{4, 5}));
  EXPECT_EQ(cut->tensor(0), (std::vector<float>{3, 4})) << "the cut keeps what it had";
}

TEST_F(ParameterTableTest, RetriedPushIsAppliedOnce) {
  rpc::StagedPush push = Stage(Header(1, 1, 5), {{"a", {1, 1}}});
  ASSERT_FALSE(table_.Apply(push)->duplicate);
  EXPECT_TRUE(table_.Apply(push)->duplicate);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
}

TEST_F(ParameterTableTest, TheJobsRuleDecidesTheApplyModeAndTheWeight) {
  table_.SetMembers({{1, 1}, {2, 1}}, 0, PushRule{v1::APPLY_MODE_IMMEDIATE, 0.25f});
  // The header's weight is not trusted: the job's 1/N is applied, and the reply says so.
  absl::StatusOr<ApplyResult> applied =
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 1e30f), {{"a", {4, 8}}}));
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->weight, 0.25f);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 4}));
  // A ROUND push in an immediate job changes nothing.
  EXPECT_EQ(table_.Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 1), {{"a", {1, 1}}}))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  // A re-sent immediate sum is already weighted: it weighs 1.
  v1::PushHeader resent = Header(2, 1, 2, v1::APPLY_MODE_IMMEDIATE, 7);
  resent.set_resent(true);
  resent.set_pushes(3);
  ASSERT_TRUE(table_.Apply(Stage(resent, {{"a", {1, 1}}})).ok());
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{3, 5}));
  // A peer-to-peer job takes no pushes at all.
  table_.SetMembers({{1, 1}, {2, 1}}, 0, PushRule{});
  EXPECT_EQ(table_.Apply(Stage(Header(1, 1, 2), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{3, 5}));
}

TEST_F(ParameterTableTest, RoundPushesWeighOneOrThePushesTheyCarry) {
  table_.SetMembers({{1, 1}, {2, 1}}, 0, PushRule{v1::APPLY_MODE_ROUND, 1});
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_ROUND, 1000, 1), {{"a", {3, 3}}})).ok());
  v1::PushHeader resent = Header(2, 1, 1, v1::APPLY_MODE_ROUND, 0.001f, 1);
  resent.set_resent(true);
  resent.set_pushes(2);
  ASSERT_TRUE(table_.Apply(Stage(resent, {{"a", {6, 6}}})).ok());
  ASSERT_TRUE(table_.CloseRound({1, {{{1, 1}, 1}, {{2, 1}, 1}}, v1::AGGREGATION_MEAN, 1.0}).ok());
  // The mean weighs the re-sent sum as the two pushes it carries: (3 + 2 * 6) / 3 = 5.
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{6, 7}));
}

TEST_F(ParameterTableTest, APushThatWouldMakeTheModelNonFiniteIsRefusedWhole) {
  ASSERT_TRUE(table_.Apply(Stage(Header(1, 1, 1), {{"b", {3e38f}}})).ok());  // b = 3e38 + 10
  const int64_t version = table_.live_version();
  // "a" is fine, "b" would overflow: neither changes, and the sequence is not used up.
  EXPECT_EQ(table_.Apply(Stage(Header(1, 1, 2), {{"a", {1, 1}}, {"b", {3e38f}}})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{1, 2}));
  EXPECT_EQ(table_.live_version(), version);
  EXPECT_EQ(table_.Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 1), {{"b", {1e38f}}}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<CloseResult> closed =
      table_.CloseRound({1, {{{2, 1}, 1}}, v1::AGGREGATION_MEAN, 1.0});
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_EQ(closed->pushes, 0u) << "the refused round push was not taken";
  auto retried = table_.Apply(Stage(Header(1, 1, 2), {{"a", {1, 1}}, {"b", {-3e38f}}}));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_FALSE(retried->duplicate);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
}

TEST(ParameterTableStartTest, NothingIsServedBeforeTheFirstMembership) {
  ParameterTable table;
  EXPECT_EQ(table.Initialize(Stage(Header(1, 1, 0), {{"a", {1}}})).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(table.Snapshot(-1).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(table.CloseRound({1, {}, v1::AGGREGATION_MEAN, 1.0}).status().code(),
            absl::StatusCode::kUnavailable);
  MembershipResult joined = table.SetMembers({{1, 1}}, 5);
  EXPECT_FALSE(joined.holds_model);  // nothing to catch up with: no model yet
  EXPECT_EQ(joined.rounds_skipped, 0);
  EXPECT_TRUE(table.Initialize(Stage(Header(1, 1, 0), {{"a", {1}}})).ok());
}

// What a restarted coordinator reads back: the members in force and how far rounds took each.
TEST_F(ParameterTableTest, MembersReportsTheMembershipAndEachLastCut) {
  EXPECT_FALSE(ParameterTable().Members().has_membership);
  ASSERT_TRUE(
      table_.Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 3), {{"a", {1, 1}}})).ok());
  ASSERT_TRUE(table_.CloseRound({1, {{{2, 1}, 3}}, v1::AGGREGATION_MEAN, 1.0}).ok());
  const Roster roster = table_.Members();
  EXPECT_TRUE(roster.has_membership);
  ASSERT_EQ(roster.members.size(), 2u);
  EXPECT_EQ(roster.members[0].trainer.id, 1u);
  EXPECT_EQ(roster.members[0].clock, -1);  // no round took its pushes
  EXPECT_EQ(roster.members[1].trainer.id, 2u);
  EXPECT_EQ(roster.members[1].clock, 3);
  table_.SetMembers({});
  EXPECT_TRUE(table_.Members().members.empty());
}

// Names are kept per trainer id, across memberships that name no one, and a rename is reported.
TEST_F(ParameterTableTest, NameMembersKeepsEachIdsNameAndReportsRenames) {
  const int64_t before = table_.durable_version();
  EXPECT_TRUE(table_.NameMembers({{1, "a"}, {2, "b"}}).empty());
  EXPECT_GT(table_.durable_version(), before);
  const int64_t named = table_.durable_version();
  EXPECT_TRUE(table_.NameMembers({{1, "a"}, {2, ""}}).empty());
  EXPECT_EQ(table_.durable_version(), named);  // nothing changed: no checkpoint is due
  EXPECT_EQ(table_.NameOf(2), "b");
  std::vector<Rename> renames = table_.NameMembers({{2, "c"}});
  ASSERT_EQ(renames.size(), 1u);
  EXPECT_EQ(renames[0].trainer_id, 2u);
  EXPECT_EQ(renames[0].from, "b");
  EXPECT_EQ(renames[0].to, "c");
  EXPECT_EQ(table_.NameOf(2), "c");
  EXPECT_EQ(table_.NameOf(7), "");
}

// A shard behind the coordinator's round (restored from an older checkpoint) publishes its model
// as that round and reports the rounds it skipped; the next round closes normally.
TEST_F(ParameterTableTest, AShardBehindCatchesUpWithTheCoordinatorsRound) {
  const std::vector<float> before = Live(table_, "a");
  MembershipResult caught_up = table_.SetMembers({{1, 1}, {2, 1}}, 4);
  EXPECT_TRUE(caught_up.holds_model);
  EXPECT_EQ(caught_up.rounds_skipped, 4);
  EXPECT_EQ(caught_up.last_closed_round, 4);
  EXPECT_EQ((*table_.Snapshot(4))->tensor(0), before);
  EXPECT_EQ(table_.SetMembers({{1, 1}, {2, 1}}, 2).rounds_skipped, 0);  // ahead: unchanged
  EXPECT_EQ(table_.last_closed_round(), 4);
  EXPECT_TRUE(table_.CloseRound({5, {}, v1::AGGREGATION_MEAN, 1.0}).ok());
}

TEST_F(ParameterTableTest, MembershipIsEnforced) {
  const std::vector<float> before = Live(table_, "a");
  EXPECT_EQ(table_.Apply(Stage(Header(9, 1, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(table_.Apply(Stage(Header(1, 2, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  table_.SetMembers({{2, 1}});
  EXPECT_EQ(table_.Apply(Stage(Header(1, 1, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Live(table_, "a"), before);
}

rpc::StagedPush RoundPush(uint64_t trainer, uint64_t sequence, int64_t clock,
                          const tensor::TensorMap& delta) {
  return Stage(Header(trainer, 1, sequence, v1::APPLY_MODE_ROUND, 1, clock), delta);
}

CloseRequest Close(int64_t round, std::vector<RoundCut> cuts,
                   v1::Aggregation aggregation = v1::AGGREGATION_MEAN, double scale = 1) {
  return CloseRequest{round, std::move(cuts), aggregation, scale};
}

TEST_F(ParameterTableTest, RoundAppliesMeanAndPublishesIdenticalSnapshot) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {2, 0}}, {"b", {4}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 1, 1, {{"a", {0, 2}}, {"b", {0}}})).ok());
  // Nothing is visible before the close.
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{1, 2}));
  absl::StatusOr<CloseResult> closed = table_.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->pushes, 2u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
  EXPECT_EQ(Live(table_, "b"), (std::vector<float>{12}));
  auto s1 = *table_.Snapshot(1);
  auto s1_again = *table_.Snapshot(1);
  EXPECT_EQ(s1->checksum, closed->checksum);
  EXPECT_EQ(s1_again->checksum, closed->checksum);
  // Closing again returns the recorded result; a late push for the closed round is refused.
  EXPECT_EQ(table_.CloseRound(Close(1, {}))->checksum, closed->checksum);
  EXPECT_EQ(table_.Apply(RoundPush(1, 2, 1, {{"a", {5, 5}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.CloseRound(Close(3, {})).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.Snapshot(2).status().code(), absl::StatusCode::kFailedPrecondition);
}

// A kept round shares its values with the live model until the next close gives each tensor it
// changes new values (a copy, or the pushes' sum): round 1 reads the same, checksum included, after
// round 2 closed.
TEST_F(ParameterTableTest, AClosedRoundKeepsItsValuesWhileLaterRoundsChangeTheModel) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {2, 0}}, {"b", {4}}})).ok());
  ASSERT_TRUE(table_.CloseRound(Close(1, {{{1, 1}, 1}})).ok());
  const std::shared_ptr<const ModelSnapshot> one = *table_.Snapshot(1);
  const std::vector<float> a = one->tensor(0);
  const uint32_t checksum = one->checksum;
  ASSERT_TRUE(table_.Apply(RoundPush(1, 2, 2, {{"a", {1, 1}}, {"b", {1}}})).ok());
  ASSERT_TRUE(table_.CloseRound(Close(2, {{{1, 1}, 2}})).ok());
  EXPECT_EQ(one->tensor(0), a);
  EXPECT_EQ((*table_.Snapshot(1))->tensor(0), a);
  EXPECT_EQ((*table_.Snapshot(1))->checksum, checksum);
  tensor::ModelChecksum recomputed;
  for (size_t i = 0; i < one->values.size(); ++i) recomputed.Add(one->tensor(i));
  EXPECT_EQ(recomputed.value(), checksum);
  EXPECT_EQ((*table_.Snapshot(2))->tensor(0), (std::vector<float>{4, 3}));
  // Round 3 leaves clock 4 pending, so it adds push by push, into a copy: round 2 stays.
  const std::shared_ptr<const ModelSnapshot> two = *table_.Snapshot(2);
  ASSERT_TRUE(table_.Apply(RoundPush(1, 3, 3, {{"a", {1, 1}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(1, 4, 4, {{"a", {1, 1}}})).ok());
  const absl::StatusOr<CloseResult> three = table_.CloseRound(Close(3, {{{1, 1}, 3}}));
  ASSERT_TRUE(three.ok());
  EXPECT_FALSE(three->summed_on_arrival);
  EXPECT_EQ(two->tensor(0), (std::vector<float>{4, 3}));
  EXPECT_EQ((*table_.Snapshot(3))->tensor(0), (std::vector<float>{5, 4}));
}

TEST_F(ParameterTableTest, CutTakesPushesUpToItsClockAndKeepsLaterOnesPending) {
  // Trainer 1 is fast: clocks 1..3 before the round is cut at 2; clock 3 joins the next round.
  for (int64_t c = 1; c <= 3; ++c) {
    ASSERT_TRUE(table_.Apply(RoundPush(1, c, c, {{"a", {1, 0}}})).ok());
  }
  ASSERT_TRUE(table_.Apply(RoundPush(2, 1, 1, {{"a", {0, 4}}})).ok());
  // WBSP as published: every delta with weight 1/N, N = 2.
  auto closed =
      table_.CloseRound(Close(1, {{{1, 1}, 2}, {{2, 1}, 1}}, v1::AGGREGATION_SCALED, 0.5));
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->pushes, 3u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 4}));
  // Each push is applied exactly once: the pending clock 3 goes into round 2, not again later.
  ASSERT_TRUE(table_.CloseRound(Close(2, {{{1, 1}, 3}}, v1::AGGREGATION_SCALED, 0.5)).ok());
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2.5, 4}));
  ASSERT_TRUE(table_.CloseRound(Close(3, {{{1, 1}, 3}, {{2, 1}, 1}}, v1::AGGREGATION_MEAN)).ok());
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2.5, 4}));
  // A retried push (same sequence) is a duplicate, not a second pending entry.
  ASSERT_TRUE(table_.Apply(RoundPush(2, 2, 2, {{"a", {0, 2}}})).ok());
  EXPECT_TRUE(table_.Apply(RoundPush(2, 2, 2, {{"a", {0, 2}}}))->duplicate);
  ASSERT_EQ(table_.CloseRound(Close(4, {{{2, 1}, 2}}))->pushes, 1u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2.5, 6}));
}

TEST_F(ParameterTableTest, DepartedTrainersPendingPushesAreDropped) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {1, 1}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 1, 1, {{"a", {3, 3}}})).ok());
  table_.SetMembers({{2, 1}});
  // Trainer 1 left with clock 1 reported: its cut still takes it.
  ASSERT_EQ(table_.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}))->pushes, 2u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{3, 4}));
  table_.SetMembers({{1, 1}, {2, 1}});
  ASSERT_TRUE(table_.Apply(RoundPush(1, 2, 2, {{"a", {9, 9}}})).ok());
  table_.SetMembers({{2, 1}});
  // Never cut and no longer a member: discarded at the next close, never applied.
  ASSERT_EQ(table_.CloseRound(Close(2, {{{2, 1}, 1}}))->pushes, 0u);
  table_.SetMembers({{1, 1}, {2, 1}});
  ASSERT_EQ(table_.CloseRound(Close(3, {{{1, 1}, 2}}))->pushes, 0u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{3, 4}));
}

// A shard closed round 2 and checkpointed it, then died before the coordinator had the reply; the
// restored shard holds no record of that close. The coordinator's retry must be answered OK (with
// round 2's checksum), not "the open round is 3", or the job stalls (tests/model found this).
TEST_F(ParameterTableTest, AClosedRoundRetriedAfterARestoreIsDone) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {2, 2}}})).ok());
  ASSERT_TRUE(table_.CloseRound(Close(1, {{{1, 1}, 1}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(1, 2, 2, {{"a", {2, 2}}})).ok());
  const absl::StatusOr<CloseResult> closed = table_.CloseRound(Close(2, {{{1, 1}, 2}}));
  ASSERT_TRUE(closed.ok());

  ParameterTable restored;
  ASSERT_TRUE(restored.Restore(table_.Durable()).ok());
  restored.SetMembers({{1, 1}, {2, 1}}, 1);  // the coordinator knows round 1 closed everywhere
  const std::vector<float> model = Live(restored, "a");
  const absl::StatusOr<CloseResult> retried = restored.CloseRound(Close(2, {{{1, 1}, 2}}));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->checksum, closed->checksum);
  EXPECT_EQ(retried->pushes, 0u);
  EXPECT_TRUE(retried->already_closed);
  EXPECT_TRUE(restored.CloseRound(Close(1, {})).ok());
  EXPECT_EQ(Live(restored, "a"), model);  // nothing applied twice
  EXPECT_EQ(restored.CloseRound(Close(4, {})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(restored.CloseRound(Close(3, {})).ok());
}

// A re-sent sum of round pushes a restart lost is behind the trainer's cut: it is not refused as
// late but goes into the next round, before the trainer's newer pushes; two such sums share the
// cut's clock, and a checkpoint of them restores.
TEST_F(ParameterTableTest, AResentRoundSumGoesIntoTheNextRound) {
  ASSERT_TRUE(table_.CloseRound(Close(1, {{{1, 1}, 5}})).ok());  // trainer 1's cut: clock 5
  rpc::StagedPush resent = RoundPush(1, 7, 4, {{"a", {0, 1}}});
  resent.header.set_resent(true);
  ASSERT_TRUE(table_.Apply(resent).ok());
  rpc::StagedPush again = RoundPush(1, 8, 5, {{"a", {0, 1}}});
  again.header.set_resent(true);
  ASSERT_TRUE(table_.Apply(again).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(1, 9, 6, {{"a", {1, 0}}})).ok());
  EXPECT_EQ(table_.Apply(RoundPush(1, 10, 5, {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);  // late, not re-sent

  ParameterTable restored;
  ASSERT_TRUE(restored.Restore(table_.Durable()).ok());
  restored.SetMembers({{1, 1}, {2, 1}});
  for (ParameterTable* t : {&table_, &restored}) {
    const absl::StatusOr<CloseResult> next = t->CloseRound(Close(2, {{{1, 1}, 5}}));
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ(next->pushes, 2u);  // both sums; clock 6 waits for its own round
    EXPECT_EQ(Live(*t, "a"), (std::vector<float>{1, 3}));
  }
}

// A round whose cuts take every pending push adds the sum kept as they arrived, in one pass; one
// that leaves a push pending adds push by push, and so does every round after it until nothing is
// pending. The model is the same either way.
TEST_F(ParameterTableTest, ARoundThatTakesEveryPendingPushAddsTheSumKeptAsTheyArrived) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {2, 0}}, {"b", {4}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 1, 1, {{"a", {0, 2}}})).ok());
  absl::StatusOr<CloseResult> closed = table_.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(closed->summed_on_arrival);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
  EXPECT_EQ(Live(table_, "b"), (std::vector<float>{12}));  // named by one push of two: mean 4/2

  // Trainer 1 runs ahead: the cut at clock 2 leaves its clock 3 pending.
  for (int64_t c = 2; c <= 3; ++c) {
    ASSERT_TRUE(table_.Apply(RoundPush(1, c, c, {{"a", {4, 0}}})).ok());
  }
  ASSERT_TRUE(table_.Apply(RoundPush(2, 2, 2, {{"a", {0, 4}}})).ok());
  closed = table_.CloseRound(Close(2, {{{1, 1}, 2}, {{2, 1}, 2}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->summed_on_arrival);
  EXPECT_EQ(closed->pushes, 2u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{4, 5}));
  // This round takes everything pending, but the sum was dropped when round 2 left a push pending
  // and is kept again only once nothing is: push by push, once more.
  ASSERT_TRUE(table_.Apply(RoundPush(2, 3, 3, {{"a", {0, 4}}})).ok());
  closed = table_.CloseRound(Close(3, {{{1, 1}, 3}, {{2, 1}, 3}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->summed_on_arrival);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{6, 7}));
  ASSERT_TRUE(table_.Apply(RoundPush(1, 4, 4, {{"a", {2, 2}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 4, 4, {{"a", {4, 4}}})).ok());
  closed = table_.CloseRound(Close(4, {{{1, 1}, 4}, {{2, 1}, 4}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(closed->summed_on_arrival);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{9, 10}));

  // Scaled rounds too; and a departed trainer's leftover, which the close drops, is not added.
  ASSERT_TRUE(table_.Apply(RoundPush(1, 5, 5, {{"a", {2, 2}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 5, 5, {{"a", {2, 4}}})).ok());
  closed = table_.CloseRound(Close(5, {{{1, 1}, 5}, {{2, 1}, 5}}, v1::AGGREGATION_SCALED, 0.5));
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(closed->summed_on_arrival);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{11, 13}));
  ASSERT_TRUE(table_.Apply(RoundPush(1, 6, 6, {{"a", {100, 100}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 6, 6, {{"a", {2, 2}}})).ok());
  table_.SetMembers({{2, 1}});
  closed = table_.CloseRound(Close(6, {{{2, 1}, 6}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->summed_on_arrival);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{13, 15}));
}

// A restored shard sums the pending pushes its checkpoint held, each at its weight (a re-sent sum
// weighs the pushes it carries), so its next round closes in one pass with the model the shard that
// wrote the checkpoint makes.
TEST_F(ParameterTableTest, ARestoredShardSumsThePendingPushesItRestored) {
  const PushRule rule{v1::APPLY_MODE_ROUND, 1};
  table_.SetMembers({{1, 1}, {2, 1}}, 0, rule);
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {3, 0}}, {"b", {3}}})).ok());
  v1::PushHeader resent = Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 1);
  resent.set_resent(true);
  resent.set_pushes(2);
  ASSERT_TRUE(table_.Apply(Stage(resent, {{"a", {0, 6}}, {"b", {6}}})).ok());
  ParameterTable restored;
  ASSERT_TRUE(restored.Restore(table_.Durable()).ok());
  restored.SetMembers({{1, 1}, {2, 1}}, 0, rule);
  for (ParameterTable* t : {&table_, &restored}) {
    const absl::StatusOr<CloseResult> closed = t->CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
    ASSERT_TRUE(closed.ok()) << closed.status();
    EXPECT_TRUE(closed->summed_on_arrival);
    // The mean weighs the re-sent sum as two pushes: (3 + 2 x 0) / 3 and (0 + 2 x 6) / 3.
    EXPECT_EQ(Live(*t, "a"), (std::vector<float>{2, 6}));
    EXPECT_EQ(Live(*t, "b"), (std::vector<float>{15}));
  }
}

// A model of several chunks per tensor, closed from the sum on one table and push by push on
// another (where a departed trainer's leftover makes the counts differ): the same values (all of
// them exact in float, so the order of the adds cannot matter).
TEST(ParameterTableSumTest, ASummedRoundOfAChunkedModelEqualsPushByPush) {
  std::vector<float> base(40000), one(40000), two(40000);
  for (size_t i = 0; i < base.size(); ++i) {
    base[i] = static_cast<float>(i % 1000);
    one[i] = static_cast<float>(i % 7) * 0.25f;
    two[i] = static_cast<float>(i % 5) * 0.5f;
  }
  ParameterTable summed, added;
  for (ParameterTable* t : {&summed, &added}) {
    t->SetMembers({{1, 1}, {2, 1}, {3, 1}});
    ASSERT_TRUE(t->Initialize(Stage(Header(1, 1, 0), {{"w", base}})).ok());
    ASSERT_TRUE(t->Apply(RoundPush(1, 1, 1, {{"w", one}})).ok());
    ASSERT_TRUE(t->Apply(RoundPush(2, 1, 1, {{"w", two}})).ok());
  }
  ASSERT_TRUE(added.Apply(RoundPush(3, 1, 1, {{"w", base}})).ok());
  added.SetMembers({{1, 1}, {2, 1}});  // trainer 3 left before its push was cut
  const absl::StatusOr<CloseResult> a = summed.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
  const absl::StatusOr<CloseResult> b = added.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->summed_on_arrival);
  EXPECT_FALSE(b->summed_on_arrival);
  EXPECT_EQ(a->checksum, b->checksum);
  const std::vector<float> w = Live(summed, "w");
  ASSERT_EQ(w, Live(added, "w"));
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(w[i], base[i] + 0.5f * (one[i] + two[i])) << i;
}

// Summed first and scaled after, two large pushes would overflow float where scaled one by one
// they do not: the sum stops at its bound and the round adds push by push.
TEST_F(ParameterTableTest, PushesWhoseSumCouldOverflowAreAddedOneByOne) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {3e38f, 0}}})).ok());
  ASSERT_TRUE(table_.Apply(RoundPush(2, 1, 1, {{"a", {3e38f, 0}}})).ok());
  const absl::StatusOr<CloseResult> closed =
      table_.CloseRound(Close(1, {{{1, 1}, 1}, {{2, 1}, 1}}));
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->summed_on_arrival);
  const std::vector<float> a = Live(table_, "a");
  EXPECT_TRUE(std::isfinite(a[0]));
  EXPECT_FLOAT_EQ(a[0], 3e38f);
}

TEST_F(ParameterTableTest, BadCloseChangesNothing) {
  ASSERT_TRUE(table_.Apply(RoundPush(1, 1, 1, {{"a", {1, 1}}})).ok());
  EXPECT_EQ(table_.CloseRound(Close(1, {{{1, 1}, 1}}, v1::AGGREGATION_UNSPECIFIED)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table_.CloseRound(Close(1, {{{1, 1}, 1}}, v1::AGGREGATION_SCALED, NAN)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Finite as a double, infinite as the float it is applied as.
  EXPECT_EQ(
      table_.CloseRound(Close(1, {{{1, 1}, 1}}, v1::AGGREGATION_SCALED, 1e300)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table_.last_closed_round(), 0);
  EXPECT_EQ(table_.CloseRound(Close(1, {{{1, 1}, 1}}))->pushes, 1u);
}

TEST_F(ParameterTableTest, PendingPushesAreBounded) {
  size_t c = 1;
  for (; c <= ParameterTable::kDefaultMaxPendingPushes; ++c) {
    ASSERT_TRUE(table_.Apply(RoundPush(1, c, static_cast<int64_t>(c), {{"b", {1}}})).ok());
  }
  EXPECT_EQ(table_.Apply(RoundPush(1, c, static_cast<int64_t>(c), {{"b", {1}}})).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(ParameterTable, ThePendingPushLimitIsTheOneGiven) {
  ParameterTable table(/*snapshots_kept=*/8, /*max_pending_pushes=*/3);
  table.SetMembers({{1, 1}});
  ASSERT_TRUE(table.Initialize(Stage(Header(1, 1, 0), {{"b", {0}}})).ok());
  for (int64_t c = 1; c <= 3; ++c) {
    ASSERT_TRUE(table.Apply(RoundPush(1, c, c, {{"b", {1}}})).ok()) << c;
  }
  EXPECT_EQ(table.Apply(RoundPush(1, 4, 4, {{"b", {1}}})).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(ParameterTableTest, OldSnapshotsAreDropped) {
  for (int64_t r = 1; r <= 10; ++r) ASSERT_TRUE(table_.CloseRound(Close(r, {})).ok());
  EXPECT_EQ(table_.Snapshot(1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(table_.Snapshot(10).ok());
  EXPECT_TRUE(table_.Snapshot(3).ok());
}

TEST_F(ParameterTableTest, ADurableStateSharesTheRoundSnapshotThatIsTheLiveModel) {
  ASSERT_TRUE(table_.CloseRound(Close(1, {})).ok());
  // Round modes: the live model is round 1's snapshot, taken without a copy.
  EXPECT_EQ(table_.Durable().model, *table_.Snapshot(1));
  // An immediate push makes the live model newer than any snapshot: a snapshot of it, push
  // included, which keeps its values while later pushes change the model.
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}})).ok());
  const DurableState state = table_.Durable();
  EXPECT_NE(state.model, *table_.Snapshot(1));
  EXPECT_EQ(state.model->live_version, table_.live_version());
  EXPECT_EQ(state.model->tensor(0), (std::vector<float>{2, 3}));
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 2, v1::APPLY_MODE_IMMEDIATE, 1.0f), {{"a", {1, 1}}})).ok());
  EXPECT_EQ(state.model->tensor(0), (std::vector<float>{2, 3}));
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{3, 4}));
}

TEST_F(ParameterTableTest, ADroppedRoundCanBeServedAsTheNewest) {
  for (int64_t r = 1; r <= 10; ++r) ASSERT_TRUE(table_.CloseRound(Close(r, {})).ok());
  auto newest = table_.Snapshot(1, /*newest_if_dropped=*/true);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ((*newest)->round, 10);
  EXPECT_EQ((*newest)->checksum, (*table_.Snapshot(10))->checksum);
  // A kept round is served as it is; one not closed yet is still refused.
  EXPECT_EQ((*table_.Snapshot(5, true))->round, 5);
  EXPECT_EQ(table_.Snapshot(11, true).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace syncopate::store
