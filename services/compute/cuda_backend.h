// The CUDA backend's entry points. Every build has them: one without CUDA (SYNCOPATE_CUDA=OFF, or
// AUTO where the toolkit or cuDNN is missing) answers UNAVAILABLE, so callers need no #ifdef.
#ifndef SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
#define SYNCOPATE_COMPUTE_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute {

// Whether this build compiled the CUDA backend.
bool CudaCompiled();

// OK when GPU `device` can run the backend. UNAVAILABLE, saying why, when the build has no CUDA
// backend, there is no GPU (cudaErrorNoDevice), no driver or one too old for this CUDA
// (cudaErrorInsufficientDriver), or fewer GPUs than `device` + 1 are visible; INTERNAL for any
// other CUDA error (a broken installation should be seen, not silently avoided).
absl::Status CudaDeviceStatus(int device = 0);

// The CUDA backend on GPU `device` (CUDA_VISIBLE_DEVICES picks which GPUs a process sees); the
// errors of CudaDeviceStatus.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
