// Finds and loads the CUDA backend plugin (cuda_backend.h, cuda_plugin.h).
#include "compute/cuda_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "compute/cuda_plugin.h"

namespace syncopate::compute {
namespace {

// The plugin's file name, as CMake builds it (services/compute/CMakeLists.txt).
constexpr char kPluginFile[] = SYNCOPATE_CUDA_PLUGIN_FILE;

// CudaPluginPath()'s plugin, loaded on first use.
const absl::StatusOr<const CudaPluginApi*>& Plugin() {
  static const auto* plugin =
      new absl::StatusOr<const CudaPluginApi*>(LoadCudaPlugin(CudaPluginPath()));
  return *plugin;
}

}  // namespace

absl::StatusOr<const CudaPluginApi*> LoadCudaPlugin(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::UnavailableError(absl::StrCat(
        "no CUDA backend: ", path,
        " does not exist (a build with SYNCOPATE_CUDA=OFF, or without the CUDA toolkit and cuDNN, "
        "has none; $SYNCOPATE_CUDA_PLUGIN names another)"));
  }
  // RTLD_LOCAL: the plugin's own copies of the compute code stay out of the binary's symbol scope.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot load the CUDA backend ", path, ": ", dlerror()));
  }
  using Entry = const CudaPluginApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaPluginEntry));
  if (entry == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(path, " is not a Syncopate CUDA backend (no ", kCudaPluginEntry, ")"));
  }
  const CudaPluginApi* api = entry();
  if (api == nullptr || api->version != kCudaPluginVersion) {
    return absl::UnavailableError(absl::StrCat(path, " was built for plugin interface ",
                                               api ? api->version : -1, ", this binary needs ",
                                               kCudaPluginVersion, " (rebuild both together)"));
  }
  return api;
}

std::string CudaPluginPath() {
  if (const char* path = std::getenv("SYNCOPATE_CUDA_PLUGIN"); path != nullptr && *path != '\0') {
    return path;
  }
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path folder = error ? std::filesystem::path(".") : binary.parent_path();
  return (folder / ".." / "lib" / kPluginFile).lexically_normal().string();
}

absl::Status CudaPluginStatus() { return Plugin().status(); }

absl::Status CudaDeviceStatus(int device) {
  if (!Plugin().ok()) return Plugin().status();
  return (*Plugin())->device_status(device);
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  if (!Plugin().ok()) return Plugin().status();
  return (*Plugin())->make_backend(device);
}

}  // namespace syncopate::compute
