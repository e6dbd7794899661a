// CPU layer kernels on OpenBLAS. Row-major throughout; a batch is the leading dimension.
#ifndef SYNCOPATE_COMPUTE_CPU_LAYERS_H_
#define SYNCOPATE_COMPUTE_CPU_LAYERS_H_

#include <cstdint>
#include <random>
#include <vector>

namespace syncopate::compute {

// A layer's weight and bias, their gradients from the last Backward, and the SGD step.
class CpuParameters {
 public:
  std::vector<float>& weight() { return weight_; }
  std::vector<float>& bias() { return bias_; }
  const std::vector<float>& weight() const { return weight_; }
  const std::vector<float>& bias() const { return bias_; }
  const std::vector<float>& weight_grad() const { return weight_grad_; }
  const std::vector<float>& bias_grad() const { return bias_grad_; }
  // parameter -= learning_rate * gradient.
  void SgdStep(float learning_rate);

 protected:
  CpuParameters(size_t weights, size_t biases)
      : weight_(weights), bias_(biases), weight_grad_(weights), bias_grad_(biases) {}
  // He-normal weights over `fan_in`, zero bias.
  void HeInitialize(std::mt19937_64& rng, int fan_in);

  std::vector<float> weight_, bias_, weight_grad_, bias_grad_;
};

// y = x W + b with W: in x out.
class CpuDense : public CpuParameters {
 public:
  CpuDense(int in, int out);
  // He-normal weights, zero bias.
  void Initialize(std::mt19937_64& rng) { HeInitialize(rng, in_); }
  void Forward(const float* x, int batch, float* y) const;
  // Given dy, fills the weight/bias gradients and, when dx is not null, dx.
  void Backward(const float* x, const float* dy, int batch, float* dx);

  int in() const { return in_; }
  int out() const { return out_; }

 private:
  int in_, out_;
};

// A 2-D convolution over square images, stride 1 and "same" zero padding (kernel / 2 on each side,
// odd kernels), computed by im2col and OpenBLAS GEMM. Layout NCHW; weight: filters x channels x
// kernel x kernel. Images are unfolded kChunk at a time, so each GEMM covers many images (one
// large multiplication instead of one small one per image) while the patch matrix stays bounded.
class CpuConv2d : public CpuParameters {
 public:
  CpuConv2d(int channels, int filters, int kernel, int size);
  // He-normal weights over the fan-in (channels * kernel^2), zero bias.
  void Initialize(std::mt19937_64& rng) { HeInitialize(rng, channels_ * kernel_ * kernel_); }
  // x: batch x channels x size x size; y: batch x filters x size x size.
  void Forward(const float* x, int batch, float* y);
  // Given dy, fills the weight/bias gradients and, when dx is not null, dx.
  void Backward(const float* x, const float* dy, int batch, float* dx);

  int channels() const { return channels_; }
  int filters() const { return filters_; }
  int kernel() const { return kernel_; }
  int size() const { return size_; }

 private:
  static constexpr int kChunk = 64;

  // Images [first, first + n) of `x` unfolded into columns_ (patch x n * size^2); returns the
  // row stride, n * size^2.
  size_t Unfold(const float* x, int first, int n);
  // One image's patches into `columns`, a (channels * kernel^2) x `stride` matrix whose first
  // size^2 columns (from `columns`) are this image's.
  void Im2Col(const float* image, float* columns, size_t stride) const;
  // Adds the patch gradients at the same place back onto one image's gradient.
  void Col2Im(const float* columns, size_t stride, float* image) const;

  int channels_, filters_, kernel_, size_;
  std::vector<float> columns_, dcolumns_;  // patch x (chunk * size^2)
  std::vector<float> chunk_out_;           // filters x (chunk * size^2)
};

// 2x2 max pooling, stride 2, over batch x channels square images of an even `size`.
// Forward records which input won each window, for Backward.
class CpuMaxPool2x2 {
 public:
  CpuMaxPool2x2(int channels, int size) : channels_(channels), size_(size) {}
  // y: batch x channels x size/2 x size/2.
  void Forward(const float* x, int batch, float* y);
  // dx (batch x channels x size x size) = dy routed to the winners, zero elsewhere.
  void Backward(const float* dy, int batch, float* dx) const;

 private:
  int channels_, size_;
  std::vector<int32_t> winners_;  // per output: index of the input within its image plane
};

// In place: v = max(v, 0).
void ReluForward(float* v, size_t n);
// dv *= (activation > 0), where `activation` is the ReLU output.
void ReluBackward(const float* activation, float* dv, size_t n);

// Softmax cross-entropy over `classes` logits per example: returns the mean loss and writes
// d(loss)/d(logits) into `dlogits` (may alias nothing).
float SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                          float* dlogits);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_CPU_LAYERS_H_
