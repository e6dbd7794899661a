// The CUDA backend's entry point as a plugin (cuda_plugin.h): the only symbol the module exports.
#include "compute/cuda_plugin.h"

#include "compute/cuda_models.h"

extern "C" __attribute__((visibility("default"))) const syncopate::compute::CudaPluginApi*
syncopate_cuda_plugin() {
  namespace compute = syncopate::compute;
  static const compute::CudaPluginApi api{compute::kCudaPluginVersion, &compute::cuda::DeviceStatus,
                                          &compute::cuda::MakeBackendOn};
  return &api;
}
