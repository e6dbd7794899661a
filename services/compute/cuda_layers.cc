#include "compute/cuda_layers.h"

#include <cstdio>
#include <cstdlib>

#include "compute/cuda_kernels.h"

namespace syncopate::compute::cuda {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

// The fastest of cuDNN's timed results that succeeded within the workspace limit.
template <typename Perf>
const Perf& Fastest(const Perf* results, int count, size_t max_bytes, const char* what) {
  for (int i = 0; i < count; ++i) {  // cuDNN returns them fastest first
    if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= max_bytes) {
      return results[i];
    }
  }
  std::fprintf(stderr, "fatal: cuDNN has no %s algorithm within %zu workspace bytes\n", what,
               max_bytes);
  std::abort();
}

}  // namespace

void CudaDense::Forward(const float* x, int batch, float* y) const {
  // Row-major y = x W is column-major y' = W' x', with W' (out x in) and x' (in x batch).
  LaunchBroadcastBias(p_.bias, batch, out_, y, context_.stream());
  CheckCublas(cublasSgemm(context_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, out_, batch, in_, &kOne,
                          p_.weight, out_, x, in_, &kOne, y, out_),
              "dense forward");
}

void CudaDense::Backward(const float* x, const float* dy, int batch, float* dx) const {
  // dW = x^T dy  <=>  dW' (out x in) = dy' (out x batch) x'^T (batch x in).
  CheckCublas(cublasSgemm(context_.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, out_, in_, batch, &kOne, dy,
                          out_, x, in_, &kZero, p_.weight_grad, out_),
              "dense weight gradient");
  LaunchBiasGradient(dy, batch, out_, p_.bias_grad, context_.stream());
  if (dx == nullptr) return;
  // dx = dy W^T  <=>  dx' (in x batch) = W'^T (in x out) dy' (out x batch).
  CheckCublas(cublasSgemm(context_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, in_, batch, out_, &kOne,
                          p_.weight, out_, dy, out_, &kZero, dx, in_),
              "dense input gradient");
}

CudaConv2d::CudaConv2d(CudaContext& context, int channels, int filters, int kernel, int size,
                       ParameterSlots slots)
    : context_(context),
      channels_(channels),
      filters_(filters),
      kernel_(kernel),
      size_(size),
      p_(slots) {
  CheckCudnn(cudnnSetFilter4dDescriptor(filter_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, filters,
                                        channels, kernel, kernel),
             "cudnnSetFilter4dDescriptor");
  const int pad = kernel / 2;
  CheckCudnn(cudnnSetConvolution2dDescriptor(convolution_.get(), pad, pad, 1, 1, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
             "cudnnSetConvolution2dDescriptor");
  CheckCudnn(cudnnSetConvolutionMathType(convolution_.get(), CUDNN_FMA_MATH),
             "cudnnSetConvolutionMathType");
  SetTensor(bias_, 1, filters, 1, 1);
}

CudaConv2d::Plan& CudaConv2d::PlanFor(int batch) {
  std::unique_ptr<Plan>& plan = plans_[batch];
  if (plan != nullptr) return *plan;
  plan = std::make_unique<Plan>();
  SetTensor(plan->x, batch, channels_, size_, size_);
  SetTensor(plan->y, batch, filters_, size_, size_);
  cudnnHandle_t h = context_.cudnn();
  int returned = 0;

  cudnnConvolutionFwdAlgoPerf_t forward[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  CheckCudnn(cudnnFindConvolutionForwardAlgorithm(
                 h, plan->x.get(), filter_.get(), convolution_.get(), plan->y.get(),
                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, forward),
             "cudnnFindConvolutionForwardAlgorithm");
  const auto& f = Fastest(forward, returned, kMaxWorkspaceBytes, "convolution forward");
  plan->forward = f.algo;
  plan->forward_bytes = f.memory;

  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  CheckCudnn(cudnnFindConvolutionBackwardDataAlgorithm(
                 h, filter_.get(), plan->y.get(), convolution_.get(), plan->x.get(),
                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, data),
             "cudnnFindConvolutionBackwardDataAlgorithm");
  const auto& d = Fastest(data, returned, kMaxWorkspaceBytes, "convolution backward-data");
  plan->backward_data = d.algo;
  plan->backward_data_bytes = d.memory;

  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  CheckCudnn(cudnnFindConvolutionBackwardFilterAlgorithm(
                 h, plan->x.get(), plan->y.get(), convolution_.get(), filter_.get(),
                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, filter),
             "cudnnFindConvolutionBackwardFilterAlgorithm");
  const auto& w = Fastest(filter, returned, kMaxWorkspaceBytes, "convolution backward-filter");
  plan->backward_filter = w.algo;
  plan->backward_filter_bytes = w.memory;
  return *plan;
}

void CudaConv2d::Forward(const float* x, int batch, float* y) {
  Plan& plan = PlanFor(batch);
  void* workspace = context_.Workspace(plan.forward_bytes);
  CheckCudnn(cudnnConvolutionForward(context_.cudnn(), &kOne, plan.x.get(), x, filter_.get(),
                                     p_.weight, convolution_.get(), plan.forward, workspace,
                                     plan.forward_bytes, &kZero, plan.y.get(), y),
             "cudnnConvolutionForward");
  CheckCudnn(cudnnAddTensor(context_.cudnn(), &kOne, bias_.get(), p_.bias, &kOne, plan.y.get(), y),
             "cudnnAddTensor");
}

void CudaConv2d::Backward(const float* x, const float* dy, int batch, float* dx) {
  Plan& plan = PlanFor(batch);
  cudnnHandle_t h = context_.cudnn();
  CheckCudnn(
      cudnnConvolutionBackwardBias(h, &kOne, plan.y.get(), dy, &kZero, bias_.get(), p_.bias_grad),
      "cudnnConvolutionBackwardBias");
  void* workspace = context_.Workspace(plan.backward_filter_bytes);
  CheckCudnn(cudnnConvolutionBackwardFilter(h, &kOne, plan.x.get(), x, plan.y.get(), dy,
                                            convolution_.get(), plan.backward_filter, workspace,
                                            plan.backward_filter_bytes, &kZero, filter_.get(),
                                            p_.weight_grad),
             "cudnnConvolutionBackwardFilter");
  if (dx == nullptr) return;
  workspace = context_.Workspace(plan.backward_data_bytes);
  CheckCudnn(cudnnConvolutionBackwardData(h, &kOne, filter_.get(), p_.weight, plan.y.get(), dy,
                                          convolution_.get(), plan.backward_data, workspace,
                                          plan.backward_data_bytes, &kZero, plan.x.get(), dx),
             "cudnnConvolutionBackwardData");
}

CudaMaxPool2x2::CudaMaxPool2x2(CudaContext& context, int channels, int size)
    : context_(context), channels_(channels), size_(size) {
  CheckCudnn(cudnnSetPooling2dDescriptor(pooling_.get(), CUDNN_POOLING_MAX_DETERMINISTIC,
                                         CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2),
             "cudnnSetPooling2dDescriptor");
}

void CudaMaxPool2x2::Describe(int batch) {
  SetTensor(in_, batch, channels_, size_, size_);
  SetTensor(out_, batch, channels_, size_ / 2, size_ / 2);
}

void CudaMaxPool2x2::Forward(const float* x, int batch, float* y) {
  Describe(batch);
  CheckCudnn(cudnnPoolingForward(context_.cudnn(), pooling_.get(), &kOne, in_.get(), x, &kZero,
                                 out_.get(), y),
             "cudnnPoolingForward");
}

void CudaMaxPool2x2::Backward(const float* x, const float* y, const float* dy, int batch,
                              float* dx) {
  Describe(batch);
  CheckCudnn(cudnnPoolingBackward(context_.cudnn(), pooling_.get(), &kOne, out_.get(), y,
                                  out_.get(), dy, in_.get(), x, &kZero, in_.get(), dx),
             "cudnnPoolingBackward");
}

CudaRelu::CudaRelu(CudaContext& context) : context_(context) {
  CheckCudnn(cudnnSetActivationDescriptor(activation_.get(), CUDNN_ACTIVATION_RELU,
                                          CUDNN_NOT_PROPAGATE_NAN, 0.0),
             "cudnnSetActivationDescriptor");
}

void CudaRelu::Forward(float* v, int batch, int count) {
  SetTensor(tensor_, batch, count, 1, 1);
  CheckCudnn(cudnnActivationForward(context_.cudnn(), activation_.get(), &kOne, tensor_.get(), v,
                                    &kZero, tensor_.get(), v),
             "cudnnActivationForward");
}

void CudaRelu::Backward(const float* activation, float* dv, int batch, int count) {
  SetTensor(tensor_, batch, count, 1, 1);
  // ReLU's output is positive exactly where its input was, so it stands in for the input.
  CheckCudnn(cudnnActivationBackward(context_.cudnn(), activation_.get(), &kOne, tensor_.get(),
                                     activation, tensor_.get(), dv, tensor_.get(), activation,
                                     &kZero, tensor_.get(), dv),
             "cudnnActivationBackward");
}

}  // namespace syncopate::compute::cuda
