// The trained model out of a job's store shards: read from their checkpoints (RUN_DIR/checkpoints)
// to be written as tensor/model_file.h's `.npz` or `.pt`, by `syncopate export` and at the end of
// `syncopate local`; `--resume-from` seeds a new job's shards from a run's checkpoints.
#ifndef SYNCOPATE_CLI_MODEL_FILE_H_
#define SYNCOPATE_CLI_MODEL_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensor/model_file.h"

namespace syncopate::cli {

// Reads every shard's checkpoint in `checkpoint_dir` (shard-<i>.ckpt, i < the number of them).
// NOT_FOUND when the directory holds no checkpoint (or cannot be read); DATA_LOSS for a
// truncated, corrupt or foreign file (store/checkpoint.h); FAILED_PRECONDITION when the files are
// not one job's shards (another shard count, a missing shard), or hold no model. Names the file.
absl::StatusOr<tensor::Model> ReadCheckpointModel(const std::string& checkpoint_dir);

// Makes `to_dir`'s shard checkpoints from `from_dir`'s, keeping only the model: a new job starts
// its rounds, membership and push counts afresh from the trained model (its trainers pull it when
// they join). The source is checked first (ReadCheckpointModel's errors); nothing is written then.
// FAILED_PRECONDITION when `to_dir` holds checkpoints already.
absl::Status SeedCheckpoints(const std::string& from_dir, const std::string& to_dir);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_MODEL_FILE_H_
