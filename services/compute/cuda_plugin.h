// The interface between the binaries and the CUDA backend, which they load at run time as the
// plugin lib/libsyncopate-cuda.so (module syncopate_cuda_plugin) rather than link.
//
// Why a plugin: linked CUDA libraries bring static thread-local storage (libcudart's 4 KiB block,
// page-aligned, on top of OpenBLAS's 60 KiB; cuBLASLt's 92 KiB) that glibc carves out of every
// thread's stack, and civetweb, behind prometheus-cpp's /metrics server, starts its threads with
// stacks too small for it: a trainer linking CUDA served no /metrics. Libraries loaded with dlopen
// get their TLS allocated on demand, so a loaded backend leaves every thread's stack alone.
//
// The plugin and the binaries are built together by one compiler from one tree, so the interface
// passes C++ types; kCudaPluginVersion changes whenever this struct or backend.h does. The plugin
// holds no generated protobuf code (its model code sees only tensor_spec.h): a second copy would
// register the same .proto files twice in the process's descriptor pool and abort it.
#ifndef SYNCOPATE_COMPUTE_CUDA_PLUGIN_H_
#define SYNCOPATE_COMPUTE_CUDA_PLUGIN_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compute/backend.h"

namespace syncopate::compute {

inline constexpr int kCudaPluginVersion = 1;

// What the plugin's entry point returns: a static table that lives as long as the process (the
// plugin is never unloaded, since the backends and models it made may live to the end).
struct CudaPluginApi {
  int version;  // kCudaPluginVersion of the plugin's build
  // cuda::DeviceStatus and cuda::MakeBackendOn (cuda_models.h).
  absl::Status (*device_status)(int device);
  absl::StatusOr<std::unique_ptr<Backend>> (*make_backend)(int device);
};

// The entry point's name; the plugin defines it as extern "C" const CudaPluginApi* NAME().
inline constexpr char kCudaPluginEntry[] = "syncopate_cuda_plugin";

// Loads the plugin at `path` (dlopen; never unloaded) and returns its table. UNAVAILABLE, saying
// why, when the file does not exist, cannot be loaded (dlerror's reason: a missing CUDA library,
// not a shared object), lacks the entry point, or speaks another kCudaPluginVersion.
// cuda_backend.h's functions load CudaPluginPath() once through this; tests call it directly.
absl::StatusOr<const CudaPluginApi*> LoadCudaPlugin(const std::string& path);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CUDA_PLUGIN_H_
