// The CUDA backend's models: the architectures of cpu_models.h (mlp, and cnn: conv blocks before
// the dense stack) with the same parameter names, layouts and initial values, so a model moves
// between CPU and GPU trainers unchanged and a mixed cluster starts from one model.
//
// Parameters and their gradients stay on the GPU in two flat arenas (one SGD kernel updates them
// all). The host sees them only through ReadParameters/WriteParameters, each one asynchronous copy
// through a pinned buffer; training inputs go up the same way, and a step brings back only the
// per-example losses.
#ifndef SYNCOPATE_COMPUTE_CUDA_MODELS_H_
#define SYNCOPATE_COMPUTE_CUDA_MODELS_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute::cuda {

// OK when GPU `device` can run the backend. UNAVAILABLE, saying why, when there is no GPU
// (cudaErrorNoDevice), no driver or one too old for this CUDA (cudaErrorInsufficientDriver), or
// fewer GPUs than `device` + 1 are visible; INTERNAL for any other CUDA error.
absl::Status DeviceStatus(int device = 0);

// The CUDA backend on GPU `device` (its description names the GPU); DeviceStatus's errors.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackendOn(int device = 0);

// INVALID_ARGUMENT for a spec ValidateSpec refuses; INTERNAL when the device cannot create a
// stream, a cuBLAS or cuDNN handle, or the model's memory.
absl::StatusOr<std::unique_ptr<Model>> MakeCudaModel(const ModelSpec& spec, uint64_t seed,
                                                     int device);

}  // namespace syncopate::compute::cuda

#endif  // SYNCOPATE_COMPUTE_CUDA_MODELS_H_
