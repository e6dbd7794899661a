#include "cli/model_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "base/files.h"
#include "gtest/gtest.h"
#include "store/checkpoint.h"

namespace syncopate::cli {
namespace {

using tensor::Model;
using tensor::ModelTensor;

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string TempDir() {
  char pattern[] = "/tmp/model-file-test-XXXXXX";
  EXPECT_NE(mkdtemp(pattern), nullptr);
  return pattern;
}

// Writes shard `shard` of `count` holding `tensors` (name, shape, values) as round `round`.
void WriteShard(const std::string& dir, uint32_t shard, uint32_t count,
                const std::vector<ModelTensor>& tensors, int64_t round) {
  auto model = std::make_shared<store::ModelSnapshot>();
  model->round = round;
  model->live_version = 7;
  for (const ModelTensor& t : tensors) {
    model->specs.push_back(t.spec);
    model->values.push_back(std::make_shared<const std::vector<float>>(t.values));
  }
  store::ShardCheckpoint checkpoint;
  checkpoint.state.model = std::move(model);
  checkpoint.state.last_closed_round = round;
  ASSERT_TRUE(base::MakeDirectories(dir).ok());
  ASSERT_TRUE(
      store::WriteCheckpoint(store::CheckpointPath(dir, shard), checkpoint, shard, count).ok());
}

TEST(ModelFileTest, ReadsEveryShardInNameOrder) {
  const std::string dir = TempDir() + "/checkpoints";
  WriteShard(dir, 0, 2, {{{"fc2.weight", {2, 3}}, {1, 2, 3, 4, 5, 6}}}, 12);
  WriteShard(dir, 1, 2, {{{"fc1.bias", {2}}, {0.5f, -0.5f}}}, 12);
  absl::StatusOr<Model> model = ReadCheckpointModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->shards, 2u);
  EXPECT_EQ(model->round, 12);
  ASSERT_EQ(model->tensors.size(), 2u);
  EXPECT_EQ(model->tensors[0].spec.name, "fc1.bias");
  EXPECT_EQ(model->tensors[1].values[5], 6.0f);
}

TEST(ModelFileTest, RefusesWhatIsNotOneJobsCheckpoints) {
  const std::string root = TempDir();
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpointModel(root + "/missing").status()));
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpointModel(root).status())) << "no checkpoint in it";
  // Shard 1 of 2 without shard 0.
  WriteShard(root + "/gap", 1, 2, {{{"w", {1}}, {1}}}, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadCheckpointModel(root + "/gap").status()));
  // Truncated.
  WriteShard(root + "/cut", 0, 1, {{{"w", {4}}, {1, 2, 3, 4}}}, 0);
  const std::string path = store::CheckpointPath(root + "/cut", 0);
  ASSERT_EQ(truncate(path.c_str(), 20), 0);
  absl::Status cut = ReadCheckpointModel(root + "/cut").status();
  EXPECT_TRUE(absl::IsDataLoss(cut)) << cut;
  EXPECT_NE(cut.message().find("shard-0.ckpt"), std::string::npos) << cut;
  // A foreign file under a checkpoint's name.
  ASSERT_TRUE(base::MakeDirectories(root + "/foreign").ok());
  std::ofstream(root + "/foreign/shard-0.ckpt") << "not a checkpoint at all";
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpointModel(root + "/foreign").status()));
}

TEST(ModelFileTest, SeedsANewJobWithTheModelOnly) {
  const std::string root = TempDir();
  WriteShard(root + "/old", 0, 1, {{{"w", {2}}, {3, 4}}}, 40);
  ASSERT_TRUE(SeedCheckpoints(root + "/old", root + "/new").ok());
  absl::StatusOr<store::ShardCheckpoint> seeded =
      store::ReadCheckpoint(store::CheckpointPath(root + "/new", 0), 0, 1);
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  EXPECT_EQ(seeded->state.last_closed_round, -1) << "rounds start afresh";
  EXPECT_FALSE(seeded->state.has_membership);
  EXPECT_EQ(seeded->state.model->tensor(0), (std::vector<float>{3, 4}));
  // Never over a run's own checkpoints; nothing is written from a bad source.
  EXPECT_TRUE(absl::IsFailedPrecondition(SeedCheckpoints(root + "/old", root + "/new")));
  EXPECT_TRUE(absl::IsNotFound(SeedCheckpoints(root + "/none", root + "/other")));
  EXPECT_FALSE(Exists(root + "/other"));
}

}  // namespace
}  // namespace syncopate::cli
