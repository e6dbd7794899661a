// The backend's own CUDA kernels, for what cuBLAS and cuDNN do not cover. Each launches on
// `stream` and returns without waiting; pointers are device memory. Row-major, batch first.
#ifndef SYNCOPATE_COMPUTE_CUDA_KERNELS_H_
#define SYNCOPATE_COMPUTE_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace syncopate::compute::cuda {

// y[b][o] = bias[o] for every row b of a batch x out matrix.
void LaunchBroadcastBias(const float* bias, int batch, int out, float* y, cudaStream_t stream);

// bias_grad[o] = sum over b of dy[b][o].
void LaunchBiasGradient(const float* dy, int batch, int out, float* bias_grad, cudaStream_t stream);

// Softmax cross-entropy over `classes` logits per example, as the CPU backend computes it:
// losses[b] = -log softmax(logits[b])[labels[b]] and dlogits = (softmax - one_hot) / batch.
// A label outside [0, classes) yields a NaN loss for that example.
void LaunchSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                               float* losses, float* dlogits, cudaStream_t stream);

// The optimizer step over a flat parameter arena: parameters[i] -= learning_rate * gradients[i].
void LaunchSgdStep(float* parameters, const float* gradients, size_t n, float learning_rate,
                   cudaStream_t stream);

// classes[b] = the index of the largest of logits[b] (the first on ties, like std::max_element).
void LaunchArgMax(const float* logits, int batch, int classes, int32_t* out, cudaStream_t stream);

}  // namespace syncopate::compute::cuda

#endif  // SYNCOPATE_COMPUTE_CUDA_KERNELS_H_
