#include "cli/model_file.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "store/checkpoint.h"

namespace syncopate::cli {
namespace {

// The shard indices of the checkpoints in `dir` (shard-<i>.ckpt).
absl::StatusOr<std::set<uint32_t>> CheckpointShards(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::NotFoundError(absl::StrCat(dir, ": cannot read the directory (", strerror(errno),
                                            "); give a run's checkpoints folder"));
  }
  std::set<uint32_t> shards;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    uint32_t shard = 0;
    if (absl::ConsumePrefix(&name, "shard-") && absl::ConsumeSuffix(&name, ".ckpt") &&
        absl::SimpleAtoi(name, &shard)) {
      shards.insert(shard);
    }
  }
  closedir(d);
  if (shards.empty()) {
    return absl::NotFoundError(absl::StrCat(dir, " holds no store checkpoint (shard-<i>.ckpt)"));
  }
  return shards;
}

// Every shard's checkpoint in `dir`, in shard order.
absl::StatusOr<std::vector<store::ShardCheckpoint>> ReadShards(const std::string& dir) {
  ASSIGN_OR_RETURN(const std::set<uint32_t> shards, CheckpointShards(dir));
  const uint32_t count = static_cast<uint32_t>(shards.size());
  if (*shards.rbegin() != count - 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " holds checkpoints of shards ", absl::StrJoin(shards, ","),
                     ": a job's shards are 0 to S-1, one file each"));
  }
  std::vector<store::ShardCheckpoint> read;
  for (uint32_t shard = 0; shard < count; ++shard) {
    ASSIGN_OR_RETURN(store::ShardCheckpoint checkpoint,
                     store::ReadCheckpoint(store::CheckpointPath(dir, shard), shard, count));
    read.push_back(std::move(checkpoint));
  }
  return read;
}

}  // namespace

absl::StatusOr<tensor::Model> ReadCheckpointModel(const std::string& checkpoint_dir) {
  ASSIGN_OR_RETURN(const std::vector<store::ShardCheckpoint> shards, ReadShards(checkpoint_dir));
  tensor::Model model;
  model.shards = static_cast<uint32_t>(shards.size());
  for (const store::ShardCheckpoint& shard : shards) {
    const store::ModelSnapshot& snapshot = *shard.state.model;
    for (size_t i = 0; i < snapshot.specs.size(); ++i) {
      model.tensors.push_back({snapshot.specs[i], snapshot.tensor(i)});
    }
    model.round = std::max(model.round, shard.state.last_closed_round);
  }
  if (model.tensors.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(checkpoint_dir, ": the checkpoints hold no model (no trainer joined?)"));
  }
  std::sort(model.tensors.begin(), model.tensors.end(),
            [](const tensor::ModelTensor& a, const tensor::ModelTensor& b) {
              return a.spec.name < b.spec.name;
            });
  return model;
}

absl::Status SeedCheckpoints(const std::string& from_dir, const std::string& to_dir) {
  ASSIGN_OR_RETURN(const std::vector<store::ShardCheckpoint> shards, ReadShards(from_dir));
  if (absl::StatusOr<std::set<uint32_t>> there = CheckpointShards(to_dir); there.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(to_dir, " holds checkpoints already: resume into a new run directory"));
  }
  RETURN_IF_ERROR(base::MakeDirectories(to_dir));
  const uint32_t count = static_cast<uint32_t>(shards.size());
  for (uint32_t shard = 0; shard < count; ++shard) {
    const store::ModelSnapshot& trained = *shards[shard].state.model;
    auto model = std::make_shared<store::ModelSnapshot>();
    model->specs = trained.specs;
    model->values = trained.values;
    model->live_version = 1;
    store::ShardCheckpoint seed;
    seed.state.model = std::move(model);
    seed.state.version = 1;
    seed.written = shards[shard].written;
    RETURN_IF_ERROR(store::WriteCheckpoint(store::CheckpointPath(to_dir, shard), std::move(seed),
                                           shard, count));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::cli
