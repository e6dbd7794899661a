// CUDA layer kernels: dense layers on cuBLAS, convolution, pooling and ReLU on cuDNN. The same
// layouts as cpu_layers.h (row-major, batch first; images NCHW; dense weight in x out; conv weight
// filters x channels x kernel x kernel), so parameters move between the backends unchanged.
// Every pointer is device memory; every call queues work on the context's stream and returns.
#ifndef SYNCOPATE_COMPUTE_CUDA_LAYERS_H_
#define SYNCOPATE_COMPUTE_CUDA_LAYERS_H_

#include <map>

#include "compute/cuda_support.h"

namespace syncopate::compute::cuda {

// Where a layer's weight and bias and their gradients live (slices of the model's arenas).
struct ParameterSlots {
  float* weight = nullptr;
  float* bias = nullptr;
  float* weight_grad = nullptr;
  float* bias_grad = nullptr;
};

// y = x W + b with W: in x out, on cuBLAS.
class CudaDense {
 public:
  CudaDense(CudaContext& context, int in, int out, ParameterSlots slots)
      : context_(context), in_(in), out_(out), p_(slots) {}
  void Forward(const float* x, int batch, float* y) const;
  // Given dy, fills the weight/bias gradients and, when dx is not null, dx.
  void Backward(const float* x, const float* dy, int batch, float* dx) const;

  int in() const { return in_; }
  int out() const { return out_; }

 private:
  CudaContext& context_;
  int in_, out_;
  ParameterSlots p_;
};

// A stride-1, "same"-padded 2-D convolution (odd kernel) on cuDNN, in full FP32 (no TF32). The
// forward, backward-data and backward-filter algorithms are chosen by timing them (cuDNN's Find)
// once per batch size, among those whose workspace fits kMaxWorkspaceBytes; the workspace is
// the context's shared scratch.
class CudaConv2d {
 public:
  static constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

  CudaConv2d(CudaContext& context, int channels, int filters, int kernel, int size,
             ParameterSlots slots);
  // x: batch x channels x size x size; y: batch x filters x size x size.
  void Forward(const float* x, int batch, float* y);
  // Given dy, fills the weight/bias gradients and, when dx is not null, dx.
  void Backward(const float* x, const float* dy, int batch, float* dx);

  int channels() const { return channels_; }
  int filters() const { return filters_; }

 private:
  // The descriptors and algorithms for one batch size.
  struct Plan {
    TensorDescriptor x, y;
    cudnnConvolutionFwdAlgo_t forward{};
    cudnnConvolutionBwdDataAlgo_t backward_data{};
    cudnnConvolutionBwdFilterAlgo_t backward_filter{};
    size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
  };
  Plan& PlanFor(int batch);

  CudaContext& context_;
  int channels_, filters_, kernel_, size_;
  ParameterSlots p_;
  FilterDescriptor filter_;
  ConvolutionDescriptor convolution_;
  TensorDescriptor bias_;
  std::map<int, std::unique_ptr<Plan>> plans_;  // by batch size
};

// 2x2 max pooling, stride 2, on cuDNN (deterministic mode).
class CudaMaxPool2x2 {
 public:
  CudaMaxPool2x2(CudaContext& context, int channels, int size);
  // y: batch x channels x size/2 x size/2.
  void Forward(const float* x, int batch, float* y);
  // dx = dy routed to the window maxima; `x` and `y` are the forward's input and output.
  void Backward(const float* x, const float* y, const float* dy, int batch, float* dx);

 private:
  void Describe(int batch);

  CudaContext& context_;
  int channels_, size_;
  PoolingDescriptor pooling_;
  TensorDescriptor in_, out_;
};

// ReLU on cuDNN over `count` values per example, in place.
class CudaRelu {
 public:
  explicit CudaRelu(CudaContext& context);
  // v = max(v, 0).
  void Forward(float* v, int batch, int count);
  // dv *= (activation > 0), where `activation` is Forward's output.
  void Backward(const float* activation, float* dv, int batch, int count);

 private:
  CudaContext& context_;
  ActivationDescriptor activation_;
  TensorDescriptor tensor_;
};

}  // namespace syncopate::compute::cuda

#endif  // SYNCOPATE_COMPUTE_CUDA_LAYERS_H_
