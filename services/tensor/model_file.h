// A trained model in files that NumPy and PyTorch load without Syncopate: `.npz` (one float32
// array per tensor, named as the job names it) or `.pt` (a torch.save state dict of float32 CPU
// tensors under the same names, loadable with torch.load(path, weights_only=True)). A run's model
// from the store shards' checkpoints and a trainer's own parameters are written this way.
#ifndef SYNCOPATE_TENSOR_MODEL_FILE_H_
#define SYNCOPATE_TENSOR_MODEL_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensor/tensor_spec.h"

namespace syncopate::tensor {

struct ModelTensor {
  TensorSpec spec;
  std::vector<float> values;  // row-major, spec.NumElements() of them
};

// A whole model, in name order.
struct Model {
  std::vector<ModelTensor> tensors;
  // The last round closed (round modes: the model is its snapshot); 0 under the immediate modes,
  // whose model is the live one, and for a trainer's own model.
  int64_t round = 0;
  uint32_t shards = 0;  // how many store shard checkpoints it came from (0: none)
};

// `specs`' tensors out of `values` (each spec's name must be there with its element count), in
// name order. INVALID_ARGUMENT names a missing tensor or a wrong count.
absl::StatusOr<Model> ModelOf(const std::vector<TensorSpec>& specs, const TensorMap& values);

// OK when `path` names a model file this library writes (it ends in .npz or .pt); INVALID_ARGUMENT
// saying so otherwise.
absl::Status CheckModelPath(const std::string& path);

// Writes `model` to `path` atomically, as .npz or .pt by the path's extension, making the folders
// it names where they are missing (a trainer on another host writes the job's model into its copy
// of the run directory); INVALID_ARGUMENT for another extension, UNAVAILABLE when the file cannot
// be written.
absl::Status WriteModel(const Model& model, const std::string& path);

// The bytes of an .npy file of one float32 tensor (format 1.0).
std::string NpyBytes(const ModelTensor& tensor);
// The pickle (protocol 2) of a torch state dict: an OrderedDict from each name to a float32
// tensor whose storage is the record data/<index> of the archive.
std::string StateDictPickle(const Model& model);

}  // namespace syncopate::tensor

#endif  // SYNCOPATE_TENSOR_MODEL_FILE_H_
