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
      size_(size) {}

namespace {

// The output columns x of a row whose kernel offset is kx that read inside the image:
// 0 <= x + kx - pad < size.
std::pair<int, int> InsideColumns(int kx, int pad, int size) {
  return {std::max(0, pad - kx), std::min(size, size + pad - kx)};
}

}  // namespace

void CpuConv2d::Im2Col(const float* image, float* columns, size_t stride) const {
  const int pad = kernel_ / 2;
  for (int c = 0; c < channels_; ++c) {
    for (int ky = 0; ky < kernel_; ++ky) {
      for (int kx = 0; kx < kernel_; ++kx) {
        float* row = columns + ((c * kernel_ + ky) * kernel_ + kx) * stride;
        const auto [lo, hi] = InsideColumns(kx, pad, size_);
        for (int y = 0; y < size_; ++y) {
          float* out = row + y * size_;
          const int iy = y + ky - pad;
          if (iy < 0 || iy >= size_ || lo >= hi) {
            std::fill(out, out + size_, 0.0f);
            continue;
          }
          const float* in = image + (c * size_ + iy) * size_ + (kx - pad);
          std::fill(out, out + lo, 0.0f);
          std::copy(in + lo, in + hi, out + lo);
          std::fill(out + hi, out + size_, 0.0f);
        }
      }
    }
  }
}

void CpuConv2d::Col2Im(const float* columns, size_t stride, float* image) const {
  const int pad = kernel_ / 2;
  for (int c = 0; c < channels_; ++c) {
    for (int ky = 0; ky < kernel_; ++ky) {
      for (int kx = 0; kx < kernel_; ++kx) {
        const float* row = columns + ((c * kernel_ + ky) * kernel_ + kx) * stride;
        const auto [lo, hi] = InsideColumns(kx, pad, size_);
        for (int y = 0; y < size_; ++y) {
          const int iy = y + ky - pad;
          if (iy < 0 || iy >= size_) continue;
          const float* in = row + y * size_;
          float* out = image + (c * size_ + iy) * size_ + (kx - pad);
          for (int x = lo; x < hi; ++x) out[x] += in[x];
        }
      }
    }
  }
}

size_t CpuConv2d::Unfold(const float* x, int first, int n) {
  const int pixels = size_ * size_;
  const size_t stride = static_cast<size_t>(n) * pixels;
  columns_.resize(static_cast<size_t>(channels_) * kernel_ * kernel_ * stride);
  for (int b = 0; b < n; ++b) {
    Im2Col(x + static_cast<size_t>(first + b) * channels_ * pixels, columns_.data() + b * pixels,
           stride);
  }
  return stride;
}

void CpuConv2d::Forward(const float* x, int batch, float* y) {
  const int pixels = size_ * size_;
  const int patch = channels_ * kernel_ * kernel_;
  for (int first = 0; first < batch; first += kChunk) {
    const int n = std::min(kChunk, batch - first);
    const size_t stride = Unfold(x, first, n);
    chunk_out_.resize(static_cast<size_t>(filters_) * stride);
    // out (filters x n * pixels) = W (filters x patch) * columns (patch x n * pixels)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, filters_, static_cast<int>(stride),
                patch, 1.0f, weight_.data(), patch, columns_.data(), static_cast<int>(stride), 0.0f,
                chunk_out_.data(), static_cast<int>(stride));
    for (int b = 0; b < n; ++b) {  // filter-major back to NCHW, adding the bias
      float* image = y + static_cast<size_t>(first + b) * filters_ * pixels;
      for (int f = 0; f < filters_; ++f) {
        const float* from = chunk_out_.data() + f * stride + b * pixels;
        float* to = image + f * pixels;
        for (int p = 0; p < pixels; ++p) to[p] = from[p] + bias_[f];
      }
    }
  }
}

void CpuConv2d::Backward(const float* x, const float* dy, int batch, float* dx) {
  const int pixels = size_ * size_;
  const int patch = channels_ * kernel_ * kernel_;
  std::fill(weight_grad_.begin(), weight_grad_.end(), 0.0f);
  std::fill(bias_grad_.begin(), bias_grad_.end(), 0.0f);
  if (dx != nullptr) std::fill(dx, dx + static_cast<size_t>(batch) * channels_ * pixels, 0.0f);
  for (int first = 0; first < batch; first += kChunk) {
    const int n = std::min(kChunk, batch - first);
    const size_t stride = Unfold(x, first, n);
    chunk_out_.resize(static_cast<size_t>(filters_) * stride);
    for (int b = 0; b < n; ++b) {
      const float* grad = dy + static_cast<size_t>(first + b) * filters_ * pixels;
      for (int f = 0; f < filters_; ++f) {
        const float* from = grad + f * pixels;
        std::copy(from, from + pixels, chunk_out_.data() + f * stride + b * pixels);
        for (int p = 0; p < pixels; ++p) bias_grad_[f] += from[p];
      }
    }
    const int columns = static_cast<int>(stride);
    // dW += dy (filters x n * pixels) * columns^T (n * pixels x patch)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, filters_, patch, columns, 1.0f,
                chunk_out_.data(), columns, columns_.data(), columns, 1.0f, weight_grad_.data(),
                patch);
    if (dx == nullptr) continue;
    // dcolumns (patch x n * pixels) = W^T (patch x filters) * dy (filters x n * pixels)
    dcolumns_.resize(columns_.size());
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, patch, columns, filters_, 1.0f,
                weight_.data(), patch, chunk_out_.data(), columns, 0.0f, dcolumns_.data(), columns);
    for (int b = 0; b < n; ++b) {
      Col2Im(dcolumns_.data() + b * pixels, stride,
             dx + static_cast<size_t>(first + b) * channels_ * pixels);
    }
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
