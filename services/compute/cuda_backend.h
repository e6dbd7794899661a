// The CUDA backend as the binaries see it: the plugin lib/libsyncopate-cuda.so (cuda_plugin.h says
// why it is loaded, not linked), found beside the running binary (<binary's folder>/../lib) or at
// the path in $SYNCOPATE_CUDA_PLUGIN, loaded once, on first use, and never unloaded.
//
// Every way the backend can be missing is UNAVAILABLE with the reason, so `--device=auto` trains
// on the CPU saying why and `--device=cuda` fails saying why: no plugin (a build without CUDA),
// one that cannot load (say, libcudnn.so.9 not found), one from another build, or no usable GPU.
#ifndef SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
#define SYNCOPATE_COMPUTE_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute {

// Where the plugin is looked for: $SYNCOPATE_CUDA_PLUGIN when set, else beside the binary.
std::string CudaPluginPath();

// OK once the plugin is loaded; UNAVAILABLE saying why it is not (the first call loads it).
absl::Status CudaPluginStatus();

// OK when GPU `device` can run the backend; UNAVAILABLE saying why not (CudaPluginStatus's
// reasons, or the device's: cuda::DeviceStatus in cuda_models.h); INTERNAL for other CUDA errors.
absl::Status CudaDeviceStatus(int device = 0);

// The CUDA backend on GPU `device`; the errors of CudaDeviceStatus.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CUDA_BACKEND_H_
