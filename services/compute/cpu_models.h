// The CPU backend's models, assembled from the OpenBLAS layers in cpu_layers.h:
//   mlp  input -> [dense + ReLU]* -> dense -> softmax cross-entropy
//   cnn  image -> [conv + ReLU + 2x2 max pool]* -> [dense + ReLU]* -> dense -> softmax
//        cross-entropy (parameters conv<i>/{weight,bias}, then fc<j>/{weight,bias})
#ifndef SYNCOPATE_COMPUTE_CPU_MODELS_H_
#define SYNCOPATE_COMPUTE_CPU_MODELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute {

// INVALID_ARGUMENT for an unknown architecture or a spec ValidateSpec refuses.
absl::StatusOr<std::unique_ptr<Model>> MakeCpuModel(const ModelSpec& spec, uint64_t seed);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CPU_MODELS_H_
