// The CUDA backend as the binaries see it. The backend itself (cuda_models.h: cuBLAS, cuDNN and
// our kernels) compiles into the library syncopate_compute_cuda wherever SYNCOPATE_CUDA finds the
// toolkit and cuDNN, and its tests and benchmark link it. The trainer does not link it yet: linked
// CUDA libraries bring static thread-local storage (libcudart's 4 KiB block, page-aligned, on top
// of OpenBLAS's 60 KiB; cuBLASLt's 92 KiB) that glibc carves out of every thread's stack, and
// civetweb, behind prometheus-cpp's /metrics server, starts its threads with stacks too small for
// it, so the trainer's /metrics stops answering. The way out is to load the backend as a plugin
// with dlopen (TLS of loaded libraries is allocated on demand); until then these entry points
// answer UNAVAILABLE, so `--device=auto` trains on the CPU and `--device=cuda` fails clearly.
#ifndef SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
#define SYNCOPATE_COMPUTE_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute {

// Whether this binary can run the CUDA backend (false until it is loaded as a plugin).
bool CudaBackendLinked();

// OK when GPU `device` can run the backend; UNAVAILABLE saying why not (for now: always).
absl::Status CudaDeviceStatus(int device = 0);

// The CUDA backend on GPU `device`; the errors of CudaDeviceStatus.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
