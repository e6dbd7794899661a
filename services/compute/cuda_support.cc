#include "compute/cuda_support.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace syncopate::compute::cuda {
namespace {

[[noreturn]] void Die(const char* what, const char* library, const char* error) {
  std::fprintf(stderr, "fatal: %s failed: %s %s\n", what, library, error);
  std::abort();
}

}  // namespace

void CheckCuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    Die(what, cudaGetErrorName(error), cudaGetErrorString(error));
  }
}

void CheckCublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) Die(what, "cuBLAS", cublasGetStatusString(status));
}

void CheckCudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) Die(what, "cuDNN", cudnnGetErrorString(status));
}

absl::Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
}

void SetTensor(const TensorDescriptor& descriptor, int n, int c, int h, int w) {
  CheckCudnn(
      cudnnSetTensor4dDescriptor(descriptor.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
      "cudnnSetTensor4dDescriptor");
}

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int device) {
  std::unique_ptr<CudaContext> context(new CudaContext());
  context->device_ = device;
  if (absl::Status s = CudaStatus(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) return s;
  if (absl::Status s = CudaStatus(
          cudaStreamCreateWithFlags(&context->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      !s.ok()) {
    return s;
  }
  if (cublasStatus_t s = cublasCreate(&context->cublas_); s != CUBLAS_STATUS_SUCCESS) {
    context->cublas_ = nullptr;
    return absl::InternalError(absl::StrCat("cublasCreate: ", cublasGetStatusString(s)));
  }
  if (cudnnStatus_t s = cudnnCreate(&context->cudnn_); s != CUDNN_STATUS_SUCCESS) {
    context->cudnn_ = nullptr;
    return absl::InternalError(absl::StrCat("cudnnCreate: ", cudnnGetErrorString(s)));
  }
  CheckCublas(cublasSetStream(context->cublas_, context->stream_), "cublasSetStream");
  // FP32 GEMMs without TF32 tensor cores (cuBLAS's default, stated), matching the CPU backend
  // within float rounding.
  CheckCublas(cublasSetMathMode(context->cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  CheckCudnn(cudnnSetStream(context->cudnn_, context->stream_), "cudnnSetStream");
  return context;
}

CudaContext::~CudaContext() {
  cudaSetDevice(device_);  // best effort: a destructor must not abort
  workspace_ = DeviceBuffer<uint8_t>();
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaContext::Activate() const { CheckCuda(cudaSetDevice(device_), "cudaSetDevice"); }

void CudaContext::Synchronize() const {
  CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace syncopate::compute::cuda
