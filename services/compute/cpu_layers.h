// CPU layer kernels on OpenBLAS. Row-major throughout; a batch is the leading dimension.
#ifndef SYNCOPATE_COMPUTE_CPU_LAYERS_H_
#define SYNCOPATE_COMPUTE_CPU_LAYERS_H_

#include <cstdint>
#include <random>
#include <vector>

namespace syncopate::compute {

// y = x W + b with W: in x out. Keeps its gradients from the last Backward.
class CpuDense {
 public:
  CpuDense(int in, int out);
  // He-normal weights, zero bias.
  void Initialize(std::mt19937_64& rng);
  void Forward(const float* x, int batch, float* y) const;
  // Given dy, fills the weight/bias gradients and, when dx is not null, dx.
  void Backward(const float* x, const float* dy, int batch, float* dx);
  void SgdStep(float learning_rate);

  int in() const { return in_; }
  int out() const { return out_; }
  std::vector<float>& weight() { return weight_; }
  std::vector<float>& bias() { return bias_; }
  const std::vector<float>& weight() const { return weight_; }
  const std::vector<float>& bias() const { return bias_; }
  const std::vector<float>& weight_grad() const { return weight_grad_; }
  const std::vector<float>& bias_grad() const { return bias_grad_; }

 private:
  int in_, out_;
  std::vector<float> weight_, bias_, weight_grad_, bias_grad_;
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
