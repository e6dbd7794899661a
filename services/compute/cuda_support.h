// What every CUDA layer and model shares: error checks, device and pinned buffers, RAII cuDNN
// descriptors, and the per-model context (device, stream, cuBLAS and cuDNN handles). CUDA builds
// only (SYNCOPATE_CUDA).
//
// Errors: set-up paths return absl::Status; once a model runs, a CUDA, cuBLAS or cuDNN failure is
// unrecoverable (the device is lost or out of memory), so Check* print the call and the library's
// error and abort the process. A trainer that dies this way is replaced like any dead pod.
#ifndef SYNCOPATE_COMPUTE_CUDA_SUPPORT_H_
#define SYNCOPATE_COMPUTE_CUDA_SUPPORT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace syncopate::compute::cuda {

// Abort with `what` and the error's name unless the call succeeded.
void CheckCuda(cudaError_t error, const char* what);
void CheckCublas(cublasStatus_t status, const char* what);
void CheckCudnn(cudnnStatus_t status, const char* what);

// OK for cudaSuccess; otherwise INTERNAL naming `what` and the error.
absl::Status CudaStatus(cudaError_t error, const char* what);

// Device memory for `T`s that only grows (Reserve keeps the old contents only when it need not
// reallocate). Movable, not copyable.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { Reserve(n); }
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `n` elements; INTERNAL (buffer empty) when the device is out of memory.
  absl::Status TryReserve(size_t n) {
    if (n <= size_) return absl::OkStatus();
    Release();
    void* p = nullptr;
    if (absl::Status s = CudaStatus(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc"); !s.ok()) {
      return s;
    }
    data_ = static_cast<T*>(p);
    size_ = n;
    return absl::OkStatus();
  }
  // At least `n` elements, aborting when out of memory; returns data().
  T* Reserve(size_t n) {
    if (absl::Status s = TryReserve(n); !s.ok()) CheckCuda(cudaErrorMemoryAllocation, "cudaMalloc");
    return data_;
  }
  T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory, so cudaMemcpyAsync is truly asynchronous; grows like DeviceBuffer.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* Reserve(size_t n) {
    if (n > size_) {
      if (data_ != nullptr) cudaFreeHost(data_);
      void* p = nullptr;
      CheckCuda(cudaMallocHost(&p, n * sizeof(T)), "cudaMallocHost");
      data_ = static_cast<T*>(p);
      size_ = n;
    }
    return data_;
  }
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// A cuDNN descriptor, created and destroyed with its owner. Not copyable or movable: layers that
// own descriptors live behind unique_ptr.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { CheckCudnn(Create(&value_), "cudnnCreate*Descriptor"); }
  ~CudnnDescriptor() { Destroy(value_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  T get() const { return value_; }

 private:
  T value_{};
};

using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                         cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                         cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                    cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                          cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor =
    CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                    cudnnDestroyActivationDescriptor>;

// NCHW float32 with the given dimensions.
void SetTensor(const TensorDescriptor& descriptor, int n, int c, int h, int w);

// One model's device, stream, and library handles bound to that stream. Every kernel, copy and
// library call of the model goes to `stream()`, so they run in order without host waits.
class CudaContext {
 public:
  // Selects `device` and creates the stream and handles; INTERNAL when any of that fails.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(int device);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  // Makes the model's device current on the calling thread (trainer threads take turns).
  void Activate() const;
  // Waits for everything queued on the stream.
  void Synchronize() const;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  // Scratch for cuDNN algorithms, shared by the model's layers (they run one at a time).
  void* Workspace(size_t bytes) { return workspace_.Reserve(bytes); }

 private:
  CudaContext() = default;

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  DeviceBuffer<uint8_t> workspace_;
};

}  // namespace syncopate::compute::cuda

#endif  // SYNCOPATE_COMPUTE_CUDA_SUPPORT_H_
