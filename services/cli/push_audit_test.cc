#include "cli/push_audit.h"

#include <cstdlib>
#include <fstream>

#include "base/files.h"
#include "gtest/gtest.h"
#include "rpc/test_pushes.h"
#include "store/checkpoint.h"

namespace syncopate::cli {
namespace {

TEST(PushAuditTest, CountsPushesLostAndTakenTwicePerShard) {
  const std::map<TrainerIdentity, int64_t> acknowledged = {{{1, 1}, 10}, {{2, 1}, 7}};
  EXPECT_EQ(ComparePushes({{{{1, 1}, 10}, {{2, 1}, 7}}}, acknowledged).lost, 0);
  // Shard 0 lost 3 of trainer 1's pushes; shard 1 took one of trainer 2's twice and has never
  // heard of an older incarnation's (not acknowledged by any trainer in the status: ignored).
  const PushAudit audit = ComparePushes(
      {{{{1, 1}, 7}, {{2, 1}, 7}}, {{{1, 1}, 10}, {{2, 1}, 8}, {{2, 0}, 4}}}, acknowledged);
  EXPECT_EQ(audit.shards, 2);
  EXPECT_EQ(audit.pushes, 34);
  EXPECT_EQ(audit.lost, 3);
  EXPECT_EQ(audit.doubled, 1);
  EXPECT_EQ(audit.given_up, 0);
}

// A push a trainer gave up as it stopped may be on some shards and not others: neither lost nor
// doubled. A second push more than acknowledged and given up is doubled still.
TEST(PushAuditTest, APushGivenUpAtTheStopMayBeOnSomeShards) {
  const std::map<TrainerIdentity, int64_t> acknowledged = {{{1, 1}, 10}};
  const std::map<TrainerIdentity, int64_t> given_up = {{{1, 1}, 1}};
  PushAudit audit = ComparePushes({{{{1, 1}, 11}}, {{{1, 1}, 10}}}, acknowledged, given_up);
  EXPECT_EQ(audit.lost, 0);
  EXPECT_EQ(audit.doubled, 0);
  EXPECT_EQ(audit.given_up, 1);
  audit = ComparePushes({{{{1, 1}, 12}}, {{{1, 1}, 10}}}, acknowledged, given_up);
  EXPECT_EQ(audit.doubled, 1);
}

// From the files a run leaves: each shard's final checkpoint and each trainer's trace.
TEST(PushAuditTest, ReadsTheCheckpointsAndTraces) {
  char pattern[] = "/tmp/syncopate-audit-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  ASSERT_TRUE(base::MakeDirectories(dir + "/checkpoints").ok());
  store::ParameterTable table;
  table.SetMembers({{5, 2}});
  ASSERT_TRUE(
      table.Initialize(rpc::testing::Stage(rpc::testing::Header(5, 2, 0), {{"w", {1}}})).ok());
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    ASSERT_TRUE(
        table.Apply(rpc::testing::Stage(rpc::testing::Header(5, 2, sequence), {{"w", {1}}})).ok());
  }
  ASSERT_TRUE(store::WriteCheckpoint(store::CheckpointPath(dir + "/checkpoints", 0),
                                     {table.Durable(), absl::Now()}, 0, 1)
                  .ok());
  std::ofstream(dir + "/trainer-0.trace.jsonl")
      << "{\"event\":\"start\",\"clock\":0}\n{\"event\":\"pushed\",\"clock\":1}\n"
         "{\"event\":\"pushed\",\"clock\":2}\n{\"event\":\"pushed\",\"clock\":3}\n"
         "{\"event\":\"pushed\",\"clock\":4}\n{\"event\":\"push_given_up\",\"clock\":5}\n"
         "{\"event\":\"pus";  // a line cut short
  v1::ClusterStatus status;
  v1::TrainerStatus* trainer = status.add_trainers();
  trainer->set_trainer_id(5);
  trainer->set_incarnation(2);
  trainer->set_rank(0);
  const absl::StatusOr<PushAudit> audit = AuditPushes(dir, 1, status);
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(audit->shards, 1);
  EXPECT_EQ(audit->pushes, 4);
  EXPECT_EQ(audit->lost, 1);  // the trainer saw 4 acknowledged; the shard holds 3
  EXPECT_EQ(audit->doubled, 0);
  EXPECT_EQ(audit->given_up, 1);
  EXPECT_EQ(AuditPushes(dir + "/elsewhere", 1, status).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(AuditPushes(dir, 2, status).status().code(),  // written for another layout
            absl::StatusCode::kFailedPrecondition);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace syncopate::cli
