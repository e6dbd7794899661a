#include "compute/cpu_layers.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace syncopate::compute {

CpuDense::CpuDense(int in, int out)
    : in_(in),
      out_(out),
      weight_(static_cast<size_t>(in) * out),
      bias_(out),
      weight_grad_(weight_.size()),
      bias_grad_(out) {}

void CpuDense::Initialize(std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(in_)));
  for (float& w : weight_) w = normal(rng);
  std::fill(bias_.begin(), bias_.end(), 0.0f);
}

void CpuDense::Forward(const float* x, int batch, float* y) const {
  for (int b = 0; b < batch; ++b) std::copy(bias_.begin(), bias_.end(), y + b * out_);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, out_, in_, 1.0f, x, in_,
              weight_.data(), out_, 1.0f, y, out_);
}

void CpuDense::Backward(const float* x, const float* dy, int batch, float* dx) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in_, out_, batch, 1.0f, x, in_, dy, out_,
              0.0f, weight_grad_.data(), out_);
  std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
  for (int b = 0; b < batch; ++b) {
    for (int o = 0; o < out_; ++o) bias_grad_[o] += dy[b * out_ + o];
  }
  if (dx != nullptr) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, in_, out_, 1.0f, dy, out_,
                weight_.data(), out_, 0.0f, dx, in_);
  }
}

void CpuDense::SgdStep(float learning_rate) {
  cblas_saxpy(static_cast<int>(weight_.size()), -learning_rate, weight_grad_.data(), 1,
              weight_.data(), 1);
  cblas_saxpy(out_, -learning_rate, bias_grad_.data(), 1, bias_.data(), 1);
}

void ReluForward(float* v, size_t n) {
  for (size_t i = 0; i < n; ++i) v[i] = std::max(v[i], 0.0f);
}

void ReluBackward(const float* activation, float* dv, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (activation[i] <= 0.0f) dv[i] = 0.0f;
  }
}

float SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                          float* dlogits) {
  double loss = 0;
  for (int b = 0; b < batch; ++b) {
    const float* z = logits + b * classes;
    float* dz = dlogits + b * classes;
    const float max = *std::max_element(z, z + classes);
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - max));
    const double log_sum = std::log(sum);
    loss += log_sum - (z[labels[b]] - max);
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c] - max) - log_sum);
      dz[c] = static_cast<float>((p - (c == labels[b] ? 1.0 : 0.0)) / batch);
    }
  }
  return static_cast<float>(loss / batch);
}

}  // namespace syncopate::compute
