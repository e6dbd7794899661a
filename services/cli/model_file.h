// The trained model out of a job, in files that NumPy and PyTorch load without Syncopate: read
// from the store shards' checkpoints (RUN_DIR/checkpoints), written as `.npz` (one float32 array
// per tensor, named as the job names it) or `.pt` (a torch.save state dict of float32 CPU tensors
// under the same names, loadable with torch.load(path, weights_only=True)). `syncopate export`
// and the end of `syncopate local` write them; `--resume-from` seeds a new job's shards from a
// run's checkpoints.
#ifndef SYNCOPATE_CLI_MODEL_FILE_H_
#define SYNCOPATE_CLI_MODEL_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensor/tensor_spec.h"

namespace syncopate::cli {

struct ModelTensor {
  tensor::TensorSpec spec;
  std::vector<float> values;  // row-major, spec.NumElements() of them
};

// A whole model, every shard's tensors together, in name order.
struct Model {
  std::vector<ModelTensor> tensors;
  // The last round closed (round modes: the model is its snapshot); 0 under the immediate modes,
  // whose model is the live one.
  int64_t round = 0;
  uint32_t shards = 0;  // how many shard checkpoints it came from
};

// Reads every shard's checkpoint in `checkpoint_dir` (shard-<i>.ckpt, i < the number of them).
// NOT_FOUND when the directory holds no checkpoint (or cannot be read); DATA_LOSS for a
// truncated, corrupt or foreign file (store/checkpoint.h); FAILED_PRECONDITION when the files are
// not one job's shards (another shard count, a missing shard), or hold no model. Names the file.
absl::StatusOr<Model> ReadCheckpointModel(const std::string& checkpoint_dir);

// Writes `model` to `path` atomically, as .npz or .pt by the path's extension; INVALID_ARGUMENT
// for another extension, UNAVAILABLE when the file cannot be written.
absl::Status WriteModel(const Model& model, const std::string& path);

// The bytes of an .npy file of one float32 tensor (format 1.0).
std::string NpyBytes(const ModelTensor& tensor);
// The pickle (protocol 2) of a torch state dict: an OrderedDict from each name to a float32
// tensor whose storage is the record data/<index> of the archive.
std::string StateDictPickle(const Model& model);

// Makes `to_dir`'s shard checkpoints from `from_dir`'s, keeping only the model: a new job starts
// its rounds, membership and push counts afresh from the trained model (its trainers pull it when
// they join). The source is checked first (ReadCheckpointModel's errors); nothing is written then.
// FAILED_PRECONDITION when `to_dir` holds checkpoints already.
absl::Status SeedCheckpoints(const std::string& from_dir, const std::string& to_dir);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_MODEL_FILE_H_
