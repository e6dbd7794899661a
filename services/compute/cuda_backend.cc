// The CUDA entry points of the binaries: UNAVAILABLE until the backend loads as a plugin
// (cuda_backend.h says why it is not linked; the backend itself is cuda_device.cc).
#include "compute/cuda_backend.h"

namespace syncopate::compute {
namespace {

absl::Status NotBuilt() {
  return absl::UnavailableError(
      "this binary has no CUDA backend (it is built as syncopate_compute_cuda but not linked "
      "into the trainer yet; see services/compute/cuda_backend.h)");
}

}  // namespace

bool CudaBackendLinked() { return false; }

absl::Status CudaDeviceStatus(int device) { return NotBuilt(); }

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) { return NotBuilt(); }

}  // namespace syncopate::compute
