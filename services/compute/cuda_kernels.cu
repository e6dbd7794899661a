#include "compute/cuda_kernels.h"

namespace syncopate::compute::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(size_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void BroadcastBias(const float* bias, int batch, int out, float* y) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<size_t>(batch) * out) y[i] = bias[i % out];
}

// One thread per output column; consecutive threads read consecutive addresses of each row.
__global__ void BiasGradient(const float* dy, int batch, int out, float* bias_grad) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= out) return;
  float sum = 0.0f;
  for (int b = 0; b < batch; ++b) sum += dy[static_cast<size_t>(b) * out + o];
  bias_grad[o] = sum;
}

// One thread per example: the class count is small (Fashion-MNIST has 10).
__global__ void SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch,
                                    int classes, float* losses, float* dlogits) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const float* z = logits + static_cast<size_t>(b) * classes;
  float* dz = dlogits + static_cast<size_t>(b) * classes;
  const int label = labels[b];
  float max = z[0];
  for (int c = 1; c < classes; ++c) max = fmaxf(max, z[c]);
  double sum = 0.0;
  for (int c = 0; c < classes; ++c) sum += exp(static_cast<double>(z[c] - max));
  const double log_sum = log(sum);
  if (label < 0 || label >= classes) {
    losses[b] = nanf("");
    for (int c = 0; c < classes; ++c) dz[c] = 0.0f;
    return;
  }
  losses[b] = static_cast<float>(log_sum - (z[label] - max));
  for (int c = 0; c < classes; ++c) {
    const double p = exp(static_cast<double>(z[c] - max) - log_sum);
    dz[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) / batch);
  }
}

__global__ void SgdStep(float* parameters, const float* gradients, size_t n, float learning_rate) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) parameters[i] -= learning_rate * gradients[i];
}

__global__ void ArgMax(const float* logits, int batch, int classes, int32_t* out) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const float* z = logits + static_cast<size_t>(b) * classes;
  int best = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > z[best]) best = c;
  }
  out[b] = best;
}

}  // namespace

void LaunchBroadcastBias(const float* bias, int batch, int out, float* y, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(batch) * out;
  if (n == 0) return;
  BroadcastBias<<<Blocks(n), kThreads, 0, stream>>>(bias, batch, out, y);
}

void LaunchBiasGradient(const float* dy, int batch, int out, float* bias_grad,
                        cudaStream_t stream) {
  if (out == 0) return;
  BiasGradient<<<Blocks(out), kThreads, 0, stream>>>(dy, batch, out, bias_grad);
}

void LaunchSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                               float* losses, float* dlogits, cudaStream_t stream) {
  if (batch == 0) return;
  SoftmaxCrossEntropy<<<Blocks(batch), kThreads, 0, stream>>>(logits, labels, batch, classes,
                                                              losses, dlogits);
}

void LaunchSgdStep(float* parameters, const float* gradients, size_t n, float learning_rate,
                   cudaStream_t stream) {
  if (n == 0) return;
  SgdStep<<<Blocks(n), kThreads, 0, stream>>>(parameters, gradients, n, learning_rate);
}

void LaunchArgMax(const float* logits, int batch, int classes, int32_t* out, cudaStream_t stream) {
  if (batch == 0) return;
  ArgMax<<<Blocks(batch), kThreads, 0, stream>>>(logits, batch, classes, out);
}

}  // namespace syncopate::compute::cuda
