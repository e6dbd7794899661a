// The CUDA backend and its device probe, as cuda_models.h declares them (library
// syncopate_compute_cuda).

#include <cuda_runtime.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "compute/cuda_models.h"

namespace syncopate::compute::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, std::string description)
      : device_(device), description_(std::move(description)) {}
  std::string name() const override { return "cuda"; }
  std::string description() const override { return description_; }
  absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                     uint64_t seed) override {
    return MakeCudaModel(spec, seed, device_);
  }

 private:
  int device_;
  std::string description_;
};

std::string Describe(cudaError_t error) {
  return absl::StrCat(cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
}

}  // namespace

absl::Status DeviceStatus(int device) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear it, so later CUDA calls do not report it again
    return absl::UnavailableError(absl::StrCat("no usable GPU: ", Describe(error)));
  }
  if (error != cudaSuccess) {
    return absl::InternalError(absl::StrCat("CUDA cannot list GPUs: ", Describe(error)));
  }
  if (device < 0 || device >= count) {
    return absl::UnavailableError(
        absl::StrCat("GPU ", device, " requested but ", count, " visible"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackendOn(int device) {
  if (absl::Status s = DeviceStatus(device); !s.ok()) return s;
  cudaDeviceProp properties{};
  if (cudaError_t e = cudaGetDeviceProperties(&properties, device); e != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cudaGetDeviceProperties: ", Describe(e)));
  }
  return std::make_unique<CudaBackend>(
      device, absl::StrCat("cuda: GPU ", device, ", ", properties.name, ", sm_", properties.major,
                           properties.minor, ", ", properties.totalGlobalMem >> 20, " MiB"));
}

}  // namespace syncopate::compute::cuda
