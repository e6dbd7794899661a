#include "compute/cpu_layers.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace syncopate::compute {

void CpuParameters::HeInitialize(std::mt19937_64& rng, int fan_in) {
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (float& w : weight_) w = normal(rng);
  std::fill(bias_.begin(), bias_.end(), 0.0f);
}

void CpuParameters::SgdStep(float learning_rate) {
  cblas_saxpy(static_cast<int>(weight_.size()), -learning_rate, weight_grad_.data(), 1,
              weight_.data(), 1);
  cblas_saxpy(static_cast<int>(bias_.size()), -learning_rate, bias_grad_.data(), 1, bias_.data(),
              1);
}

CpuDense::CpuDense(int in, int out)
    : CpuParameters(static_cast<size_t>(in) * out, out), in_(in), out_(out) {}

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

CpuConv2d::CpuConv2d(int channels, int filters, int kernel, int size)
    : CpuParameters(static_cast<size_t>(filters) * channels * kernel * kernel, filters),
      channels_(channels),
      filters_(filters),
      kernel_(kernel),
      size_(size),
      columns_(static_cast<size_t>(channels) * kernel * kernel * size * size),
      dcolumns_(columns_.size()) {}

void CpuConv2d::Im2Col(const float* image, float* columns) const {
  const int pad = kernel_ / 2;
  const int pixels = size_ * size_;
  for (int c = 0; c < channels_; ++c) {
    for (int ky = 0; ky < kernel_; ++ky) {
      for (int kx = 0; kx < kernel_; ++kx) {
        float* row = columns + ((c * kernel_ + ky) * kernel_ + kx) * pixels;
        for (int y = 0; y < size_; ++y) {
          const int iy = y + ky - pad;
          for (int x = 0; x < size_; ++x) {
            const int ix = x + kx - pad;
            const bool inside = iy >= 0 && iy < size_ && ix >= 0 && ix < size_;
            row[y * size_ + x] = inside ? image[(c * size_ + iy) * size_ + ix] : 0.0f;
          }
        }
      }
    }
  }
}

void CpuConv2d::Col2Im(const float* columns, float* image) const {
  const int pad = kernel_ / 2;
  const int pixels = size_ * size_;
  for (int c = 0; c < channels_; ++c) {
    for (int ky = 0; ky < kernel_; ++ky) {
      for (int kx = 0; kx < kernel_; ++kx) {
        const float* row = columns + ((c * kernel_ + ky) * kernel_ + kx) * pixels;
        for (int y = 0; y < size_; ++y) {
          const int iy = y + ky - pad;
          if (iy < 0 || iy >= size_) continue;
          for (int x = 0; x < size_; ++x) {
            const int ix = x + kx - pad;
            if (ix >= 0 && ix < size_) image[(c * size_ + iy) * size_ + ix] += row[y * size_ + x];
          }
        }
      }
    }
  }
}

void CpuConv2d::Forward(const float* x, int batch, float* y) {
  const int pixels = size_ * size_;
  const int patch = channels_ * kernel_ * kernel_;
  for (int b = 0; b < batch; ++b) {
    Im2Col(x + static_cast<size_t>(b) * channels_ * pixels, columns_.data());
    float* out = y + static_cast<size_t>(b) * filters_ * pixels;
    for (int f = 0; f < filters_; ++f)
      std::fill(out + f * pixels, out + (f + 1) * pixels, bias_[f]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, filters_, pixels, patch, 1.0f,
                weight_.data(), patch, columns_.data(), pixels, 1.0f, out, pixels);
  }
}

void CpuConv2d::Backward(const float* x, const float* dy, int batch, float* dx) {
  const int pixels = size_ * size_;
  const int patch = channels_ * kernel_ * kernel_;
  std::fill(weight_grad_.begin(), weight_grad_.end(), 0.0f);
  std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
  if (dx != nullptr) std::fill(dx, dx + static_cast<size_t>(batch) * channels_ * pixels, 0.0f);
  for (int b = 0; b < batch; ++b) {
    const float* grad = dy + static_cast<size_t>(b) * filters_ * pixels;
    Im2Col(x + static_cast<size_t>(b) * channels_ * pixels, columns_.data());
    // dW += dy (filters x pixels) * columns^T (pixels x patch)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, filters_, patch, pixels, 1.0f, grad,
                pixels, columns_.data(), pixels, 1.0f, weight_grad_.data(), patch);
    for (int f = 0; f < filters_; ++f) {
      for (int p = 0; p < pixels; ++p) bias_grad_[f] += grad[f * pixels + p];
    }
    if (dx == nullptr) continue;
    // dcolumns = W^T (patch x filters) * dy (filters x pixels)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, patch, pixels, filters_, 1.0f,
                weight_.data(), patch, grad, pixels, 0.0f, dcolumns_.data(), pixels);
    Col2Im(dcolumns_.data(), dx + static_cast<size_t>(b) * channels_ * pixels);
  }
}

void CpuMaxPool2x2::Forward(const float* x, int batch, float* y) {
  const int half = size_ / 2;
  const size_t outputs = static_cast<size_t>(batch) * channels_ * half * half;
  winners_.resize(outputs);
  for (size_t plane = 0; plane < static_cast<size_t>(batch) * channels_; ++plane) {
    const float* in = x + plane * size_ * size_;
    for (int oy = 0; oy < half; ++oy) {
      for (int ox = 0; ox < half; ++ox) {
        int best = (2 * oy) * size_ + 2 * ox;
        for (int dy = 0; dy < 2; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            const int at = (2 * oy + dy) * size_ + 2 * ox + dx;
            if (in[at] > in[best]) best = at;
          }
        }
        const size_t out = plane * half * half + oy * half + ox;
        y[out] = in[best];
        winners_[out] = best;
      }
    }
  }
}

void CpuMaxPool2x2::Backward(const float* dy, int batch, float* dx) const {
  const int half = size_ / 2;
  const size_t planes = static_cast<size_t>(batch) * channels_;
  std::fill(dx, dx + planes * size_ * size_, 0.0f);
  for (size_t plane = 0; plane < planes; ++plane) {
    for (int o = 0; o < half * half; ++o) {
      const size_t out = plane * half * half + o;
      dx[plane * size_ * size_ + winners_[out]] += dy[out];
    }
  }
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
