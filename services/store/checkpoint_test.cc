#include "store/checkpoint.h"

#include <cstdlib>
#include <fstream>
#include <limits>

#include "base/files.h"
#include "gtest/gtest.h"
#include "rpc/test_pushes.h"
#include "syncopate/v1/checkpoint.pb.h"

namespace syncopate::store {
namespace {

using rpc::testing::Header;
using rpc::testing::Stage;

// A snapshot's values, to compare (ModelSnapshot shares them by pointer).
std::vector<std::vector<float>> Values(const std::shared_ptr<const ModelSnapshot>& s) {
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < s->values.size(); ++i) values.push_back(s->tensor(i));
  return values;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/syncopate-checkpoint-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = CheckpointPath(dir_, 1);
    table_.SetMembers({{1, 1}});
    ASSERT_TRUE(table_.Initialize(Stage(Header(1, 1, 0), {{"w", {1, 2, 3}}, {"b", {-4}}})).ok());
    ASSERT_TRUE(table_.Apply(Stage(Header(1, 1, 1), {{"w", {1, 1, 1}}})).ok());
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::shared_ptr<const ModelSnapshot> Live() { return *table_.Snapshot(-1); }
  ShardCheckpoint Now() { return {table_.Durable(), absl::FromUnixSeconds(1700000000)}; }

  std::string dir_;
  std::string path_;
  ParameterTable table_;
};

TEST_F(CheckpointTest, RoundTripsTheLiveModel) {
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  absl::StatusOr<ShardCheckpoint> read = ReadCheckpoint(path_, 1, 3);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state.model->specs, Live()->specs);
  EXPECT_EQ(Values(read->state.model), Values(Live()));
  EXPECT_EQ(read->state.model->live_version, Live()->live_version);
  EXPECT_EQ(read->written, absl::FromUnixSeconds(1700000000));
}

// The streamed file is one v1::Checkpoint: its pending pushes and values, written after the other
// fields, read as that message's; and the message serialized whole (as checkpoints were written
// before they were streamed) reads the same.
TEST_F(CheckpointTest, TheStreamedLayoutIsOneMessageAndTheWholeLayoutStillReads) {
  ParameterTable rounds;
  rounds.SetMembers({{1, 1}, {2, 1}});
  ASSERT_TRUE(rounds.Initialize(Stage(Header(1, 1, 0), {{"w", {1, 2}}, {"b", {3}}})).ok());
  ASSERT_TRUE(rounds
                  .Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 1),
                               {{"w", {0.5f, 0.25f}}, {"b", {1}}}))
                  .ok());
  const absl::StatusOr<std::string> streamed =
      EncodeCheckpoint({rounds.Durable(), absl::FromUnixSeconds(1700000000)}, 1, 3);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  v1::Checkpoint message;
  ASSERT_TRUE(message.ParseFromString(*streamed));
  EXPECT_EQ(message.tensors_size(), 2);
  EXPECT_EQ(message.values_size(), 2);
  EXPECT_EQ(message.pending_size(), 1);
  message.clear_checksum();
  const std::string whole = SealCheckpoint(message.SerializeAsString());
  EXPECT_NE(whole, *streamed) << "the layouts differ (values and pending pushes move)";
  for (const std::string* bytes : {&*streamed, &whole}) {
    absl::StatusOr<ShardCheckpoint> read = ParseCheckpoint(*bytes, "layout", 1, 3);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(Values(read->state.model), (std::vector<std::vector<float>>{{3}, {1, 2}}));
    ASSERT_EQ(read->state.pending.size(), 1u);
    EXPECT_EQ(read->state.pending[0]->header.trainer_id(), 2u);
    EXPECT_EQ(read->written, absl::FromUnixSeconds(1700000000));
  }
}

// Each tensor is let go as soon as `write` took it, while the later ones are written.
TEST_F(CheckpointTest, EachTensorIsLetGoOnceWritten) {
  auto model = std::make_shared<ModelSnapshot>();
  model->specs = {{"b", {1}}, {"w", {3}}};
  model->values = {std::make_shared<const std::vector<float>>(1, 1.0f),
                   std::make_shared<const std::vector<float>>(3, 2.0f)};
  std::vector<std::weak_ptr<const std::vector<float>>> tensors(model->values.begin(),
                                                               model->values.end());
  ShardCheckpoint checkpoint;
  checkpoint.state.model = std::move(model);  // the only holder
  std::vector<size_t> alive_when_written;     // live tensors of the cut as each one's bytes go out
  absl::Status streamed =
      StreamCheckpoint(std::move(checkpoint), 1, 3, [&](absl::string_view piece) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          std::shared_ptr<const std::vector<float>> t = tensors[i].lock();
          if (t && piece.data() == reinterpret_cast<const char*>(t->data())) {
            size_t alive = 0;
            for (const auto& w : tensors) alive += !w.expired();
            alive_when_written.push_back(alive);
          }
        }
        return absl::OkStatus();
      });
  ASSERT_TRUE(streamed.ok()) << streamed;
  EXPECT_EQ(alive_when_written, (std::vector<size_t>{2, 1}));
  EXPECT_TRUE(tensors[0].expired() && tensors[1].expired());
  // A write that fails stops it there.
  int writes = 0;
  EXPECT_EQ(StreamCheckpoint(Now(), 1, 3,
                             [&](absl::string_view) {
                               return ++writes == 2 ? absl::UnavailableError("disk full")
                                                    : absl::OkStatus();
                             })
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(writes, 2);
}

// Found by checkpoint_fuzz: a file whose checksum holds but whose model is not finite (written by
// something else) is refused, not restored into a model every trainer would pull.
TEST_F(CheckpointTest, ANonFiniteModelIsDataLoss) {
  ShardCheckpoint checkpoint = Now();
  auto model = std::make_shared<ModelSnapshot>(*checkpoint.state.model);
  std::vector<float> poisoned = model->tensor(0);
  poisoned[0] = std::numeric_limits<float>::quiet_NaN();
  model->values[0] = std::make_shared<const std::vector<float>>(std::move(poisoned));
  checkpoint.state.model = model;
  absl::StatusOr<std::string> file = EncodeCheckpoint(checkpoint, 1, 3);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(ParseCheckpoint(*file, "nan", 1, 3).status().code(), absl::StatusCode::kDataLoss);
  // The same file, finite, reads.
  EXPECT_TRUE(ParseCheckpoint(*EncodeCheckpoint(Now(), 1, 3), "finite", 1, 3).ok());
}

// Found by checkpoint_fuzz: a file naming a tensor twice (its checksum right) is refused; the table
// would have restored one of the two.
TEST_F(CheckpointTest, ATensorNamedTwiceIsDataLoss) {
  ShardCheckpoint checkpoint = Now();
  auto model = std::make_shared<ModelSnapshot>(*checkpoint.state.model);
  model->specs.push_back(model->specs[0]);
  model->values.push_back(model->values[0]);
  checkpoint.state.model = model;
  absl::StatusOr<std::string> file = EncodeCheckpoint(checkpoint, 1, 3);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(ParseCheckpoint(*file, "twice", 1, 3).status().code(), absl::StatusCode::kDataLoss);
}

// A shard restarted mid-job resumes where its checkpoint was: the round, each trainer's cut and
// its applied sequences (a retried push stays a duplicate), and the round's snapshot is
// bit-identical to the one it published before.
TEST_F(CheckpointTest, RestoreResumesRoundsCutsAndSequences) {
  ParameterTable rounds;
  rounds.SetMembers({{1, 1}, {2, 1}});
  ASSERT_TRUE(rounds.Initialize(Stage(Header(1, 1, 0), {{"w", {1, 2}}})).ok());
  for (uint64_t trainer : {1, 2}) {
    ASSERT_TRUE(rounds
                    .Apply(Stage(Header(trainer, 1, 1, v1::APPLY_MODE_ROUND, 1, 1),
                                 {{"w", {1, static_cast<float>(trainer)}}}))
                    .ok());
  }
  ASSERT_TRUE(rounds.CloseRound({1, {{{1, 1}, 1}, {{2, 1}, 1}}, v1::AGGREGATION_MEAN, 1.0}).ok());
  const uint32_t checksum = (*rounds.Snapshot(1))->checksum;
  ASSERT_TRUE(WriteCheckpoint(path_, {rounds.Durable(), absl::Now()}, 1, 3).ok());

  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  EXPECT_EQ(restarted.last_closed_round(), 1);
  // Until the coordinator reconciles it, the shard serves nothing.
  EXPECT_EQ(restarted.Snapshot(1).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(restarted.SetMembers({{1, 1}, {2, 1}}, 1).rounds_skipped, 0);
  EXPECT_EQ((*restarted.Snapshot(1))->checksum, checksum);
  // Trainer 1's round-1 push is behind its cut; its sequence 1 is a duplicate.
  auto late = restarted.Apply(Stage(Header(1, 1, 2, v1::APPLY_MODE_ROUND, 1, 1), {{"w", {1, 1}}}));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  auto retry = restarted.Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 2), {{"w", {1, 1}}}));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->duplicate);
}

// A coordinator that restarts while every shard restarts too finds the job in the checkpoints:
// the restored shard reports the membership (and each member's cut) before any coordinator has
// reconciled it, and still serves nothing until one does.
TEST_F(CheckpointTest, TheMembershipSurvivesARestart) {
  table_.SetMembers({{1, 1}, {3, 2}});
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  const Roster roster = restarted.Members();
  EXPECT_TRUE(roster.has_membership);
  ASSERT_EQ(roster.members.size(), 2u);
  EXPECT_EQ(roster.members[1].trainer.id, 3u);
  EXPECT_EQ(roster.members[1].trainer.incarnation, 2u);
  EXPECT_EQ(restarted.Apply(Stage(Header(1, 1, 9), {{"w", {1, 1, 1}}})).status().code(),
            absl::StatusCode::kUnavailable);
  // A checkpoint written before any membership restores none.
  ParameterTable never_set;
  DurableState state = table_.Durable();
  state.has_membership = false;
  state.members.clear();
  ASSERT_TRUE(never_set.Restore(state).ok());
  EXPECT_FALSE(never_set.Members().has_membership);
}

// The trainers' names survive a restart of every process (a `helm upgrade`): under TLS a restored
// shard still takes a trainer's pushes only from that trainer's certificate.
TEST_F(CheckpointTest, TheNamesSurviveARestart) {
  table_.NameMembers({{1, "trainer-a"}, {3, "trainer-c"}});
  table_.SetMembers({{1, 1}, {3, 2}});
  table_.NameMembers({{1, ""}});  // a membership that names no one keeps the names
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  EXPECT_EQ(restarted.NameOf(1), "trainer-a");
  EXPECT_EQ(restarted.NameOf(3), "trainer-c");
  EXPECT_EQ(restarted.NameOf(2), "");
}

// The job's end survives a restart with the membership: a coordinator that restarts with every
// shard still ends the job in the round it began to. Keeping it again changes nothing; a change
// (the evaluator's accuracy arrived) is due for a checkpoint. A bad one in a file is data loss.
TEST_F(CheckpointTest, TheJobsEndSurvivesARestart) {
  prometheus::Registry registry;
  StoreMetrics metrics(registry);
  Checkpointer checkpointer(table_, metrics, dir_, 1, 3);
  table_.SetMembers({{1, 1}});
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  v1::JobEnd end;
  end.set_final_round(12);
  end.set_reason("the time limit");
  table_.SetMembers({{1, 1}}, 0, std::nullopt, end);
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 2);
  table_.SetMembers({{1, 1}}, 0, std::nullopt, end);
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 2) << "the same end again: nothing to write";
  end.set_final_test_accuracy(0.81);
  table_.SetMembers({{1, 1}}, 0, std::nullopt, end);
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 3);

  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  const std::optional<v1::JobEnd> kept = restarted.Members().job_end;
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->final_round(), 12);
  EXPECT_EQ(kept->reason(), "the time limit");
  EXPECT_DOUBLE_EQ(kept->final_test_accuracy(), 0.81);
  EXPECT_FALSE(ParameterTable().Members().job_end.has_value());

  for (double accuracy : {-0.5, 1.5}) {
    ShardCheckpoint checkpoint = Now();
    checkpoint.state.job_end = end;
    checkpoint.state.job_end->set_final_test_accuracy(accuracy);
    absl::StatusOr<std::string> file = EncodeCheckpoint(checkpoint, 1, 3);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(ParseCheckpoint(*file, "end", 1, 3).status().code(), absl::StatusCode::kDataLoss);
  }
}

// A checkpoint naming a trainer id twice, or by a name the coordinator never gives (one that
// could forge a log line), came from somewhere else.
TEST_F(CheckpointTest, ABadOrRepeatedNameIsDataLoss) {
  for (const auto& names : std::vector<std::vector<std::pair<uint64_t, std::string>>>{
           {{1, "trainer-a"}, {1, "trainer-b"}}, {{1, "trainer\nforged"}}, {{1, ""}}}) {
    ShardCheckpoint checkpoint = Now();
    checkpoint.state.names = names;
    absl::StatusOr<std::string> file = EncodeCheckpoint(checkpoint, 1, 3);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(ParseCheckpoint(*file, "names", 1, 3).status().code(), absl::StatusCode::kDataLoss)
        << names[0].second;
  }
}

// A change of membership alone (a join, a leave) is written: the model did not change, but what a
// restarted coordinator resumes from did.
TEST_F(CheckpointTest, AMembershipChangeIsCheckpointed) {
  prometheus::Registry registry;
  StoreMetrics metrics(registry);
  Checkpointer checkpointer(table_, metrics, dir_, 1, 3);
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 1);
  table_.SetMembers({{1, 1}});  // the same membership again: nothing to write
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 1);
  table_.SetMembers({{1, 1}, {2, 1}});
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 2);
  EXPECT_EQ(ReadCheckpoint(path_, 1, 3)->state.members.size(), 2u);
  table_.NameMembers({{2, "trainer-b"}});  // a name alone is written too
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 3);
  table_.NameMembers({{2, "trainer-b"}});
  ASSERT_TRUE(checkpointer.SaveIfChanged().ok());
  EXPECT_EQ(metrics.checkpoints_written.Value(), 3);
}

// Round pushes no round has taken yet survive a restart: a round that waits for a slow trainer
// (or one stuck until the progress timeout) loses nothing it had when the checkpoint was cut.
TEST_F(CheckpointTest, PendingRoundPushesSurviveARestart) {
  ParameterTable rounds;
  rounds.SetMembers({{1, 1}, {2, 1}});
  ASSERT_TRUE(rounds.Initialize(Stage(Header(1, 1, 0), {{"w", {1, 2}}})).ok());
  const int64_t version = rounds.durable_version();
  for (int64_t clock = 1; clock <= 2; ++clock) {
    ASSERT_TRUE(rounds
                    .Apply(Stage(Header(1, 1, clock, v1::APPLY_MODE_ROUND, 1, clock),
                                 {{"w", {static_cast<float>(clock), 0}}}))
                    .ok());
  }
  EXPECT_GT(rounds.durable_version(), version);  // a pending push is worth a checkpoint
  ASSERT_TRUE(WriteCheckpoint(path_, {rounds.Durable(), absl::Now()}, 1, 3).ok());

  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  restarted.SetMembers({{1, 1}, {2, 1}}, 0);
  // Trainer 1's clocks 1 and 2 were pending: the cut at clock 1 takes one, then the other.
  auto first = restarted.CloseRound({1, {{{1, 1}, 1}}, v1::AGGREGATION_SCALED, 1.0});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->pushes, 1u);
  EXPECT_EQ((*restarted.Snapshot(1))->tensor(0), (std::vector<float>{2, 2}));
  EXPECT_EQ(restarted.CloseRound({2, {{{1, 1}, 2}}, v1::AGGREGATION_SCALED, 1.0})->pushes, 1u);
  EXPECT_EQ((*restarted.Snapshot(2))->tensor(0), (std::vector<float>{4, 2}));
  // A retry of a pending push that was checkpointed is a duplicate.
  auto retry = restarted.Apply(Stage(Header(1, 1, 2, v1::APPLY_MODE_ROUND, 1, 2), {{"w", {1, 1}}}));
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->duplicate);
}

// A pending push that does not fit the restored model is refused, and nothing is restored.
TEST_F(CheckpointTest, APendingPushThatDoesNotFitIsRefused) {
  ParameterTable rounds;
  rounds.SetMembers({{1, 1}});
  ASSERT_TRUE(rounds.Initialize(Stage(Header(1, 1, 0), {{"w", {1, 2}}})).ok());
  ASSERT_TRUE(
      rounds.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_ROUND, 1, 1), {{"w", {1, 1}}})).ok());
  DurableState state = rounds.Durable();
  auto model = std::make_shared<ModelSnapshot>(*state.model);
  model->specs[0].name = "v";
  state.model = model;
  ParameterTable restarted;
  EXPECT_EQ(restarted.Restore(state).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(restarted.Specs().empty());
}

TEST_F(CheckpointTest, MissingIsNotFoundAndOtherLayoutsAreRefused) {
  EXPECT_EQ(ReadCheckpoint(path_, 1, 3).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  EXPECT_EQ(ReadCheckpoint(path_, 1, 2).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadCheckpoint(path_, 0, 3).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CheckpointTest, CorruptionIsDataLoss) {
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  std::string bytes = *base::ReadFile(path_);
  // Flip a bit near the end: in the last tensor's values or the checksum.
  std::string flipped = bytes;
  flipped[flipped.size() - 7] ^= 0x10;
  ASSERT_TRUE(base::WriteFileAtomically(path_, flipped).ok());
  EXPECT_EQ(ReadCheckpoint(path_, 1, 3).status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(base::WriteFileAtomically(path_, bytes.substr(0, bytes.size() / 2)).ok());
  EXPECT_EQ(ReadCheckpoint(path_, 1, 3).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(CheckpointTest, RestoredModelIsTheInitialModelOfTheNextJob) {
  ASSERT_TRUE(WriteCheckpoint(path_, Now(), 1, 3).ok());
  ParameterTable restarted;
  ASSERT_TRUE(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).ok());
  EXPECT_EQ(restarted.last_closed_round(), 0);
  // The next job's trainers initialize with fresh weights: the checkpoint wins.
  restarted.SetMembers({{7, 1}});
  EXPECT_EQ(Values(*restarted.Snapshot(0)), Values(Live()));
  auto init = restarted.Initialize(Stage(Header(7, 1, 0), {{"w", {0, 0, 0}}, {"b", {0}}}));
  ASSERT_TRUE(init.ok());
  EXPECT_TRUE(init->already_initialized);
  EXPECT_EQ(Values(*restarted.Snapshot(-1)), Values(Live()));
  // A different architecture is refused rather than mixed in.
  EXPECT_EQ(restarted.Initialize(Stage(Header(7, 1, 0), {{"w", {0, 0}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Restoring over a model is refused and changes nothing.
  EXPECT_EQ(restarted.Restore(ReadCheckpoint(path_, 1, 3)->state).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace syncopate::store
