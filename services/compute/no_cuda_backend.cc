// The CUDA entry points of a build without the CUDA backend (SYNCOPATE_CUDA=OFF, or AUTO where
// nvcc, the toolkit or cuDNN was not found).
#include "compute/cuda_backend.h"

namespace syncopate::compute {
namespace {

absl::Status NotBuilt() {
  return absl::UnavailableError(
      "this build has no CUDA backend (configure with -DSYNCOPATE_CUDA=ON where the CUDA toolkit "
      "and cuDNN are installed)");
}

}  // namespace

bool CudaCompiled() { return false; }

absl::Status CudaDeviceStatus(int device) { return NotBuilt(); }

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) { return NotBuilt(); }

}  // namespace syncopate::compute
