// The CUDA backend against the CPU backend (label `gpu`; every test skips where no GPU is present,
// and fails where one is but cannot be used: device.h, GpuExpectedBecause).
// Each layer runs forward and backward on both backends over the same random inputs; results must
// agree within kAbsolute + kRelative * |cpu| per value (FP32 throughout, different summation
// orders; TF32 is off on both cuBLAS and cuDNN). Whole models must start identical, take the same
// SGD step, and a CNN on the GPU must learn Fashion-MNIST. The layers are linked here directly;
// the models come from the plugin, loaded the way the trainer loads it (cuda_backend.h).
#include "compute/cuda_backend.h"

#include <cmath>
#include <random>
#include <vector>

#include "compute/backend.h"
#include "compute/cpu_layers.h"
#include "compute/cuda_kernels.h"
#include "compute/cuda_layers.h"
#include "compute/cuda_models.h"
#include "compute/cuda_support.h"
#include "compute/device.h"
#include "data/dataset.h"
#include "gtest/gtest.h"

namespace syncopate::compute::cuda {
namespace {

constexpr float kAbsolute = 1e-4f;
constexpr float kRelative = 1e-4f;

std::vector<float> Random(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void ExpectClose(const std::vector<float>& cuda, const std::vector<float>& cpu,
                 const std::string& what) {
  ASSERT_EQ(cuda.size(), cpu.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (std::fabs(cuda[i] - cpu[i]) > kAbsolute + kRelative * std::fabs(cpu[i])) {
      if (bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: cuda " << cuda[i] << ", cpu " << cpu[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": values outside the tolerance";
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status usable = DeviceStatus();
    if (!usable.ok()) {
      const std::optional<std::string> expected = GpuExpectedBecause();
      ASSERT_FALSE(expected) << *expected << ", but no GPU can be used: " << usable;
      GTEST_SKIP() << "no GPU: " << usable.message();
    }
    auto context = CudaContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = std::move(*context);
    auto backend = MakeBackend("cuda");
    ASSERT_TRUE(backend.ok()) << backend.status();
    ASSERT_EQ((*backend)->description().rfind("cuda: GPU 0, ", 0), 0u) << (*backend)->description();
    backend_ = std::move(*backend);
  }

  template <typename T>
  DeviceBuffer<T> Upload(const std::vector<T>& host) {
    DeviceBuffer<T> buffer(std::max<size_t>(host.size(), 1));
    CheckCuda(
        cudaMemcpy(buffer.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
        "test upload");
    // A pageable upload may still be in flight when cudaMemcpy returns, and the context's stream
    // does not wait for the default stream.
    CheckCuda(cudaDeviceSynchronize(), "test upload");
    return buffer;
  }

  template <typename T>
  std::vector<T> Download(const DeviceBuffer<T>& buffer, size_t n) {
    context_->Synchronize();
    CheckCuda(cudaGetLastError(), "test kernels");
    std::vector<T> host(n);
    CheckCuda(cudaMemcpy(host.data(), buffer.data(), n * sizeof(T), cudaMemcpyDeviceToHost),
              "test download");
    return host;
  }

  // Device copies of a CPU layer's parameters, and room for their gradients.
  struct DeviceParameters {
    DeviceBuffer<float> weight, bias, weight_grad, bias_grad;
    ParameterSlots slots() {
      return {weight.data(), bias.data(), weight_grad.data(), bias_grad.data()};
    }
  };
  DeviceParameters UploadParameters(const CpuParameters& layer) {
    DeviceParameters p{Upload(layer.weight()), Upload(layer.bias()),
                       DeviceBuffer<float>(layer.weight().size()),
                       DeviceBuffer<float>(layer.bias().size())};
    return p;
  }

  std::unique_ptr<CudaContext> context_;
  std::unique_ptr<Backend> backend_;  // from the plugin
  std::mt19937 rng_{11};
};

TEST_F(CudaTest, DenseMatchesCpu) {
  const int in = 37, out = 19, batch = 13;
  CpuDense cpu(in, out);
  cpu.weight() = Random(cpu.weight().size(), rng_);
  cpu.bias() = Random(cpu.bias().size(), rng_);
  const std::vector<float> x = Random(batch * in, rng_), dy = Random(batch * out, rng_);
  std::vector<float> y(batch * out), dx(batch * in);
  cpu.Forward(x.data(), batch, y.data());
  cpu.Backward(x.data(), dy.data(), batch, dx.data());

  DeviceParameters p = UploadParameters(cpu);
  CudaDense gpu(*context_, in, out, p.slots());
  DeviceBuffer<float> gx = Upload(x), gdy = Upload(dy), gy(batch * out), gdx(batch * in);
  gpu.Forward(gx.data(), batch, gy.data());
  gpu.Backward(gx.data(), gdy.data(), batch, gdx.data());
  ExpectClose(Download(gy, y.size()), y, "dense y");
  ExpectClose(Download(gdx, dx.size()), dx, "dense dx");
  ExpectClose(Download(p.weight_grad, cpu.weight_grad().size()), cpu.weight_grad(), "dense dW");
  ExpectClose(Download(p.bias_grad, cpu.bias_grad().size()), cpu.bias_grad(), "dense db");
}

class CudaConvTest : public CudaTest, public ::testing::WithParamInterface<int> {};

TEST_P(CudaConvTest, ConvolutionMatchesCpu) {
  const int kernel = GetParam(), channels = 3, filters = 4, size = 8, batch = 5;
  CpuConv2d cpu(channels, filters, kernel, size);
  cpu.weight() = Random(cpu.weight().size(), rng_);
  cpu.bias() = Random(cpu.bias().size(), rng_);
  const size_t in_values = static_cast<size_t>(batch) * channels * size * size;
  const size_t out_values = static_cast<size_t>(batch) * filters * size * size;
  const std::vector<float> x = Random(in_values, rng_), dy = Random(out_values, rng_);
  std::vector<float> y(out_values), dx(in_values);
  cpu.Forward(x.data(), batch, y.data());
  cpu.Backward(x.data(), dy.data(), batch, dx.data());

  DeviceParameters p = UploadParameters(cpu);
  CudaConv2d gpu(*context_, channels, filters, kernel, size, p.slots());
  DeviceBuffer<float> gx = Upload(x), gdy = Upload(dy), gy(out_values), gdx(in_values);
  gpu.Forward(gx.data(), batch, gy.data());
  gpu.Backward(gx.data(), gdy.data(), batch, gdx.data());
  ExpectClose(Download(gy, y.size()), y, "conv y");
  ExpectClose(Download(gdx, dx.size()), dx, "conv dx");
  ExpectClose(Download(p.weight_grad, cpu.weight_grad().size()), cpu.weight_grad(), "conv dW");
  ExpectClose(Download(p.bias_grad, cpu.bias_grad().size()), cpu.bias_grad(), "conv db");
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaConvTest, ::testing::Values(1, 3, 5));

TEST_F(CudaTest, MaxPoolMatchesCpu) {
  const int channels = 3, size = 8, batch = 4;
  const size_t in_values = static_cast<size_t>(batch) * channels * size * size;
  const std::vector<float> x = Random(in_values, rng_), dy = Random(in_values / 4, rng_);
  CpuMaxPool2x2 cpu(channels, size);
  std::vector<float> y(in_values / 4), dx(in_values);
  cpu.Forward(x.data(), batch, y.data());
  cpu.Backward(dy.data(), batch, dx.data());

  CudaMaxPool2x2 gpu(*context_, channels, size);
  DeviceBuffer<float> gx = Upload(x), gdy = Upload(dy), gy(y.size()), gdx(dx.size());
  gpu.Forward(gx.data(), batch, gy.data());
  gpu.Backward(gx.data(), gy.data(), gdy.data(), batch, gdx.data());
  ExpectClose(Download(gy, y.size()), y, "pool y");
  ExpectClose(Download(gdx, dx.size()), dx, "pool dx");
}

TEST_F(CudaTest, ReluMatchesCpu) {
  const int batch = 6, count = 50;
  std::vector<float> v = Random(batch * count, rng_);
  const std::vector<float> dv = Random(v.size(), rng_);
  CudaRelu gpu(*context_);
  DeviceBuffer<float> gv = Upload(v), gdv = Upload(dv);
  gpu.Forward(gv.data(), batch, count);
  gpu.Backward(gv.data(), gdv.data(), batch, count);
  std::vector<float> cpu_dv = dv;
  ReluForward(v.data(), v.size());
  ReluBackward(v.data(), cpu_dv.data(), v.size());
  ExpectClose(Download(gv, v.size()), v, "relu y");
  ExpectClose(Download(gdv, dv.size()), cpu_dv, "relu dx");
}

TEST_F(CudaTest, SoftmaxCrossEntropyMatchesCpu) {
  const int batch = 33, classes = 10;
  const std::vector<float> logits = Random(batch * classes, rng_, 5.0f);
  std::vector<int32_t> labels(batch);
  for (int b = 0; b < batch; ++b) labels[b] = (b * 7) % classes;
  std::vector<float> dlogits(logits.size());
  const float loss =
      SoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, dlogits.data());

  DeviceBuffer<float> gz = Upload(logits), glosses(batch), gdz(logits.size());
  DeviceBuffer<int32_t> glabels = Upload(labels);
  LaunchSoftmaxCrossEntropy(gz.data(), glabels.data(), batch, classes, glosses.data(), gdz.data(),
                            context_->stream());
  double sum = 0;
  for (float l : Download(glosses, batch)) sum += l;
  EXPECT_NEAR(sum / batch, loss, kAbsolute + kRelative * loss);
  ExpectClose(Download(gdz, dlogits.size()), dlogits, "dlogits");
}

TEST_F(CudaTest, SgdStepAndArgMax) {
  const std::vector<float> p = Random(1000, rng_), g = Random(1000, rng_);
  DeviceBuffer<float> gp = Upload(p), gg = Upload(g);
  LaunchSgdStep(gp.data(), gg.data(), p.size(), 0.25f, context_->stream());
  std::vector<float> expected(p.size());
  for (size_t i = 0; i < p.size(); ++i) expected[i] = p[i] - 0.25f * g[i];
  ExpectClose(Download(gp, p.size()), expected, "sgd");

  const std::vector<float> logits = {0, 3, 1, /**/ 2, 2, -1, /**/ -5, -4, -3};
  DeviceBuffer<float> gz = Upload(logits);
  DeviceBuffer<int32_t> classes(3);
  LaunchArgMax(gz.data(), 3, 3, classes.data(), context_->stream());
  EXPECT_EQ(Download(classes, 3), (std::vector<int32_t>{1, 0, 2}));  // ties: the first
}

ModelSpec Cnn() {
  ModelSpec spec;
  spec.architecture = "cnn";
  return spec;
}

class CudaModelTest : public CudaTest, public ::testing::WithParamInterface<std::string> {
 protected:
  ModelSpec Spec() const { return GetParam() == "cnn" ? Cnn() : ModelSpec{}; }
};

TEST_P(CudaModelTest, StartsIdenticalAndTakesTheSameStepAsCpu) {
  auto cpu = *(*MakeBackend("cpu"))->CreateModel(Spec(), 5);
  auto gpu = *backend_->CreateModel(Spec(), 5);
  tensor::TensorMap cpu_params, gpu_params;
  cpu->ReadParameters(&cpu_params);
  gpu->ReadParameters(&gpu_params);
  ASSERT_EQ(gpu->Parameters(), cpu->Parameters());
  EXPECT_EQ(gpu_params, cpu_params);  // bit-identical: both drew them on the host

  const int batch = 32;
  const std::vector<float> x = Random(static_cast<size_t>(batch) * 784, rng_);
  std::vector<int32_t> labels(batch);
  for (int b = 0; b < batch; ++b) labels[b] = b % 10;
  const float cpu_loss = cpu->TrainStep(x.data(), labels.data(), batch, 0.1f);
  const float gpu_loss = gpu->TrainStep(x.data(), labels.data(), batch, 0.1f);
  EXPECT_NEAR(gpu_loss, cpu_loss, kAbsolute + kRelative * cpu_loss);
  cpu->ReadParameters(&cpu_params);
  gpu->ReadParameters(&gpu_params);
  for (const auto& [name, values] : cpu_params) ExpectClose(gpu_params.at(name), values, name);

  std::vector<int32_t> cpu_classes(batch), gpu_classes(batch);
  cpu->Predict(x.data(), batch, cpu_classes.data());
  gpu->Predict(x.data(), batch, gpu_classes.data());
  EXPECT_EQ(gpu_classes, cpu_classes);
}

TEST_P(CudaModelTest, WriteParametersRefusesBadInputAndChangesNothing) {
  auto gpu = *backend_->CreateModel(Spec(), 5);
  tensor::TensorMap before, after;
  gpu->ReadParameters(&before);
  EXPECT_FALSE(gpu->WriteParameters({{"fc1/bias", {1, 2}}}).ok());
  EXPECT_FALSE(gpu->WriteParameters({{"fc1/bias", before.at("fc1/bias")}, {"nope", {1}}}).ok());
  gpu->ReadParameters(&after);
  EXPECT_EQ(after, before);

  tensor::TensorMap changed = {
      {"fc1/bias", std::vector<float>(before.at("fc1/bias").size(), 0.5f)}};
  ASSERT_TRUE(gpu->WriteParameters(changed).ok());
  gpu->ReadParameters(&after);
  EXPECT_EQ(after.at("fc1/bias"), changed.at("fc1/bias"));
  EXPECT_EQ(after.at("fc1/weight"), before.at("fc1/weight"));
}

INSTANTIATE_TEST_SUITE_P(Architectures, CudaModelTest, ::testing::Values("mlp", "cnn"));

// A short run on real data: the loss falls and the model classifies held-out images.
TEST_F(CudaTest, CnnTrainingOnTheGpuLowersTheLoss) {
  auto train = data::LoadFashionMnist(data::kDefaultFashionMnistDir, "train");
  ASSERT_TRUE(train.ok()) << train.status();
  auto test = data::LoadFashionMnist(data::kDefaultFashionMnistDir, "test");
  ASSERT_TRUE(test.ok()) << test.status();
  auto model = *backend_->CreateModel(Cnn(), 1);

  const int batch = 128, steps = 200;
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    const size_t start = (static_cast<size_t>(step) * batch) % (train->size() - batch);
    losses.push_back(model->TrainStep(train->images.data() + start * train->features,
                                      train->labels.data() + start, batch, 0.05f));
  }
  auto mean = [](auto begin, auto end) {
    double sum = 0;
    for (auto it = begin; it != end; ++it) sum += *it;
    return sum / static_cast<double>(end - begin);
  };
  const double first = mean(losses.begin(), losses.begin() + 10);
  const double last = mean(losses.end() - 10, losses.end());
  EXPECT_LT(last, 0.6 * first) << "first 10 steps " << first << ", last 10 " << last;
  const double accuracy =
      Accuracy(*model, test->images.data(), test->labels.data(), 2000, test->features);
  EXPECT_GT(accuracy, 0.65);
}

}  // namespace
}  // namespace syncopate::compute::cuda
