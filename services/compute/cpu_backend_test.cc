#include <link.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compute/backend.h"
#include "compute/cpu_layers.h"
#include "compute/cuda_backend.h"
#include "compute/cuda_plugin.h"
#include "compute/device.h"
#include "gtest/gtest.h"

namespace syncopate::compute {
namespace {

// The paths of the shared objects loaded into this process.
std::vector<std::string> LoadedLibraries() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && *info->dlpi_name != '\0')
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &paths);
  return paths;
}

bool AnyLoaded(const std::string& fragment) {
  for (const std::string& path : LoadedLibraries())
    if (path.find(fragment) != std::string::npos) return true;
  return false;
}

ModelSpec Small() {
  ModelSpec spec;
  spec.input_features = 6;
  spec.hidden = {5};
  spec.classes = 3;
  return spec;
}

TEST(CpuBackend, SameSeedSameParameters) {
  auto backend = *MakeBackend("cpu");
  auto a = *backend->CreateModel(Small(), 42);
  auto b = *backend->CreateModel(Small(), 42);
  tensor::TensorMap pa, pb;
  a->ReadParameters(&pa);
  b->ReadParameters(&pb);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(a->Parameters().size(), 4u);
}

// Without a usable GPU (or a CUDA build), "cuda" fails with the reason and "auto" falls back to
// the CPU with that same reason; with one, both give the CUDA backend.
TEST(MakeBackend, CudaOrAClearReasonToFallBack) {
  const absl::Status usable = CudaDeviceStatus();
  std::string reason;
  auto automatic = MakeBackend("auto", &reason);
  auto cuda = MakeBackend("cuda");
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  if (usable.ok()) {
    EXPECT_EQ((*automatic)->name(), "cuda");
    EXPECT_TRUE(reason.empty());
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_NE((*cuda)->description().find("GPU 0"), std::string::npos);
    return;
  }
  EXPECT_TRUE(absl::IsUnavailable(usable)) << usable;
  EXPECT_EQ((*automatic)->name(), "cpu");
  EXPECT_EQ(reason, usable.message());
  EXPECT_FALSE(reason.empty());
  ASSERT_FALSE(cuda.ok());
  EXPECT_TRUE(absl::IsUnavailable(cuda.status()));
  EXPECT_EQ(cuda.status().message(), usable.message());
}

// Where CUDA is built (SYNCOPATE_EXPECT_CUDA_PLUGIN), the plugin loads, GPU or not, and brings
// no protobuf with it (the binaries that load it register their own generated code; a second copy
// would abort them). Where CUDA is not built, saying so is the reason to fall back.
TEST(CudaPlugin, LoadsWhereBuiltElseSaysThereIsNone) {
#ifdef SYNCOPATE_EXPECT_CUDA_PLUGIN
  ASSERT_FALSE(AnyLoaded("libprotobuf")) << "this test is meant to link no protobuf";
  ASSERT_TRUE(CudaPluginStatus().ok()) << CudaPluginStatus();
  EXPECT_TRUE(AnyLoaded("libsyncopate-cuda.so"));
  EXPECT_TRUE(AnyLoaded("libcudart"));
  EXPECT_FALSE(AnyLoaded("libprotobuf")) << "the CUDA plugin pulled in protobuf";
  const absl::Status device = CudaDeviceStatus();
  if (!device.ok()) {
    EXPECT_NE(device.message().find("GPU"), std::string::npos) << device;
  }
#else
  EXPECT_NE(CudaPluginStatus().message().find("no CUDA backend"), std::string::npos)
      << CudaPluginStatus();
#endif
}

TEST(CudaPlugin, WhatIsNotAPluginIsUnavailableWithTheReason) {
  auto missing = LoadCudaPlugin("/nonexistent/libsyncopate-cuda.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsUnavailable(missing.status()));
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);

  const std::string text = ::testing::TempDir() + "/not-a-library.so";
  std::ofstream(text) << "not an ELF file\n";
  auto garbage = LoadCudaPlugin(text);
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(absl::IsUnavailable(garbage.status()));
  EXPECT_NE(garbage.status().message().find("cannot load the CUDA backend"), std::string::npos);

  // A real shared library without the entry point.
  std::string libm;
  for (const std::string& path : LoadedLibraries())
    if (path.find("libm.so") != std::string::npos) libm = path;
  ASSERT_FALSE(libm.empty());
  auto other = LoadCudaPlugin(libm);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("is not a Syncopate CUDA backend"), std::string::npos)
      << other.status();
}

TEST(MakeBackend, UnknownDeviceNamesTheSupportedOnes) {
  auto tpu = MakeBackend("tpu");
  ASSERT_FALSE(tpu.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(tpu.status()));
  EXPECT_NE(tpu.status().message().find("cpu, cuda, cuda:N, auto"), std::string::npos);
  EXPECT_EQ(CudaDeviceStatus(-1).ok(), false);
}

TEST(ParseDevice, ReadsEverySpellingAndRefusesTheRest) {
  struct Case {
    const char* text;
    Device::Kind kind;
    int gpu;
  };
  for (const Case& c :
       {Case{"cpu", Device::Kind::kCpu, 0}, Case{"auto", Device::Kind::kAuto, 0},
        Case{"cuda", Device::Kind::kCuda, 0}, Case{"cuda:0", Device::Kind::kCuda, 0},
        Case{"cuda:3", Device::Kind::kCuda, 3}}) {
    absl::StatusOr<Device> device = ParseDevice(c.text);
    ASSERT_TRUE(device.ok()) << c.text << ": " << device.status();
    EXPECT_EQ(device->kind, c.kind) << c.text;
    EXPECT_EQ(device->gpu, c.gpu) << c.text;
  }
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:+1", "cuda: 1", "cuda:1x",
                          "cuda:99999999999", "cpu:0"}) {
    absl::StatusOr<Device> device = ParseDevice(bad);
    ASSERT_FALSE(device.ok()) << "'" << bad << "' was accepted";
    EXPECT_TRUE(absl::IsInvalidArgument(device.status()));
    EXPECT_NE(device.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos)
        << device.status();
  }
}

// The GPU tests' judgment of "no GPU here" rests on the host, not on the CUDA code under test.
TEST(GpuExpectedBecause, TheEnvironmentDecidesBeforeTheDeviceNode) {
  const char* inherited = std::getenv("SYNCOPATE_REQUIRE_GPU");
  const std::optional<std::string> saved =
      inherited ? std::optional<std::string>(inherited) : std::nullopt;
  setenv("SYNCOPATE_REQUIRE_GPU", "1", 1);
  EXPECT_EQ(GpuExpectedBecause(), "SYNCOPATE_REQUIRE_GPU=1");
  setenv("SYNCOPATE_REQUIRE_GPU", "0", 1);
  EXPECT_EQ(GpuExpectedBecause(), std::nullopt);
  unsetenv("SYNCOPATE_REQUIRE_GPU");
  EXPECT_EQ(GpuExpectedBecause().has_value(), access("/dev/nvidia0", F_OK) == 0);
  if (saved) setenv("SYNCOPATE_REQUIRE_GPU", saved->c_str(), 1);
}

// A GPU ordinal past those visible is UNAVAILABLE, never the CPU in disguise.
TEST(MakeBackend, AGpuThatIsNotThereIsUnavailable) {
  auto far = MakeBackend("cuda:64");
  ASSERT_FALSE(far.ok());
  EXPECT_TRUE(absl::IsUnavailable(far.status())) << far.status();
}

TEST(CpuBackend, RejectsBadSpecsDevicesAndParameters) {
  EXPECT_FALSE(MakeBackend("tpu").ok());
  auto backend = *MakeBackend("cpu");
  ModelSpec bad = Small();
  bad.architecture = "transformer";
  EXPECT_FALSE(backend->CreateModel(bad, 1).ok());
  auto m = *backend->CreateModel(Small(), 1);
  EXPECT_FALSE(m->WriteParameters({{"fc1/weight", {1, 2}}}).ok());
  EXPECT_FALSE(m->WriteParameters({{"nope", {1}}}).ok());
}

// A CNN small enough for finite differences: 1 x 4 x 4 images, 2 filters of 3x3, one pool.
ModelSpec TinyCnn() {
  ModelSpec spec;
  spec.architecture = "cnn";
  spec.image_channels = 1;
  spec.image_size = 4;
  spec.input_features = 16;
  spec.conv_filters = {2};
  spec.conv_kernel = 3;
  spec.hidden = {4};
  spec.classes = 3;
  return spec;
}

// The analytic gradient of the whole model matches central finite differences, checked through
// the update: TrainStep with learning rate 1 subtracts exactly the gradient.
void ExpectGradientMatchesFiniteDifferences(const ModelSpec& spec) {
  auto backend = *MakeBackend("cpu");
  auto model = *backend->CreateModel(spec, 7);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(4 * spec.input_features);
  for (float& v : x) v = u(rng);
  std::vector<int32_t> y = {0, 2, 1, 2};

  tensor::TensorMap before, after;
  model->ReadParameters(&before);
  auto loss_at = [&](const tensor::TensorMap& params) {
    auto probe = *backend->CreateModel(spec, 7);
    EXPECT_TRUE(probe->WriteParameters(params).ok());
    return probe->TrainStep(x.data(), y.data(), 4, 0.0f);
  };
  model->TrainStep(x.data(), y.data(), 4, 1.0f);
  model->ReadParameters(&after);
  const double eps = 1e-3;
  for (const auto& [name, values] : before) {
    for (size_t i = 0; i < values.size(); i += 3) {
      tensor::TensorMap plus = before, minus = before;
      plus[name][i] += eps;
      minus[name][i] -= eps;
      const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * eps);
      const double analytic = before.at(name)[i] - after.at(name)[i];
      EXPECT_NEAR(analytic, numeric, 2e-3) << spec.architecture << " " << name << "[" << i << "]";
    }
  }
}

TEST(CpuBackend, MlpGradientMatchesFiniteDifferences) {
  ExpectGradientMatchesFiniteDifferences(Small());
}

TEST(CpuBackend, CnnGradientMatchesFiniteDifferences) {
  ExpectGradientMatchesFiniteDifferences(TinyCnn());
}

TEST(CpuBackend, CnnParametersAreNamedAndShaped) {
  auto backend = *MakeBackend("cpu");
  auto model = *backend->CreateModel(ModelSpec{"cnn"}, 1);  // the default: Fashion-MNIST's CNN
  std::vector<std::string> names;
  for (const tensor::TensorSpec& p : model->Parameters()) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"conv1/bias", "conv1/weight", "conv2/bias", "conv2/weight",
                                      "fc1/bias", "fc1/weight", "fc2/bias", "fc2/weight"}));
  tensor::TensorMap params;
  model->ReadParameters(&params);
  EXPECT_EQ(params["conv1/weight"].size(), 16u * 1 * 5 * 5);
  EXPECT_EQ(params["conv2/weight"].size(), 32u * 16 * 5 * 5);
  EXPECT_EQ(params["fc1/weight"].size(), 32u * 7 * 7 * 128);
}

TEST(CpuBackend, CnnSpecsAreValidated) {
  ModelSpec spec = TinyCnn();
  EXPECT_TRUE(ValidateSpec(spec).ok());
  spec.conv_kernel = 4;
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec = TinyCnn();
  spec.input_features = 15;
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec = TinyCnn();
  spec.conv_filters = {2, 2, 2};  // 4 -> 2 -> 1 -> cannot halve 1
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec.conv_filters = {};
  EXPECT_FALSE(ValidateSpec(spec).ok());
}

// The im2col convolution equals the textbook sum over the kernel, zero outside the image.
TEST(CpuLayers, ConvolutionMatchesTheDirectSum) {
  const int channels = 2, filters = 3, kernel = 3, size = 5;
  CpuConv2d conv(channels, filters, kernel, size);
  std::mt19937_64 rng(9);
  conv.Initialize(rng);
  std::uniform_real_distribution<float> u(-1, 1);
  std::mt19937 r(4);
  for (float& b : conv.bias()) b = u(r);
  std::vector<float> x(2 * channels * size * size);
  for (float& v : x) v = u(r);
  std::vector<float> y(2 * filters * size * size);
  conv.Forward(x.data(), 2, y.data());
  for (int b = 0; b < 2; ++b) {
    for (int f = 0; f < filters; ++f) {
      for (int oy = 0; oy < size; ++oy) {
        for (int ox = 0; ox < size; ++ox) {
          double sum = conv.bias()[f];
          for (int c = 0; c < channels; ++c) {
            for (int ky = 0; ky < kernel; ++ky) {
              for (int kx = 0; kx < kernel; ++kx) {
                const int iy = oy + ky - 1, ix = ox + kx - 1;
                if (iy < 0 || iy >= size || ix < 0 || ix >= size) continue;
                sum += conv.weight()[((f * channels + c) * kernel + ky) * kernel + kx] *
                       x[((b * channels + c) * size + iy) * size + ix];
              }
            }
          }
          EXPECT_NEAR(y[((b * filters + f) * size + oy) * size + ox], sum, 1e-5);
        }
      }
    }
  }
}

// A batch unfolded in several chunks gives what its images give one at a time: the same outputs
// and input gradients, and weight/bias gradients that are their sums.
TEST(CpuLayers, ConvolutionOverManyChunksEqualsImageByImage) {
  const int channels = 2, filters = 3, kernel = 5, size = 6, batch = 150;
  const int in = channels * size * size, out = filters * size * size;
  CpuConv2d conv(channels, filters, kernel, size);
  std::mt19937_64 rng(5);
  conv.Initialize(rng);
  std::uniform_real_distribution<float> u(-1, 1);
  std::mt19937 r(6);
  std::vector<float> x(batch * in), dy(batch * out), y(batch * out), dx(batch * in);
  for (float& v : x) v = u(r);
  for (float& v : dy) v = u(r);
  conv.Forward(x.data(), batch, y.data());
  conv.Backward(x.data(), dy.data(), batch, dx.data());
  const std::vector<float> weight_grad = conv.weight_grad(), bias_grad = conv.bias_grad();

  std::vector<double> weight_sum(weight_grad.size()), bias_sum(bias_grad.size());
  std::vector<float> y1(out), dx1(in);
  for (int b = 0; b < batch; ++b) {
    conv.Forward(x.data() + b * in, 1, y1.data());
    conv.Backward(x.data() + b * in, dy.data() + b * out, 1, dx1.data());
    for (int i = 0; i < out; ++i) ASSERT_NEAR(y[b * out + i], y1[i], 1e-5) << b;
    for (int i = 0; i < in; ++i) ASSERT_NEAR(dx[b * in + i], dx1[i], 1e-5) << b;
    for (size_t i = 0; i < weight_sum.size(); ++i) weight_sum[i] += conv.weight_grad()[i];
    for (size_t i = 0; i < bias_sum.size(); ++i) bias_sum[i] += conv.bias_grad()[i];
  }
  for (size_t i = 0; i < weight_sum.size(); ++i) EXPECT_NEAR(weight_grad[i], weight_sum[i], 1e-3);
  for (size_t i = 0; i < bias_sum.size(); ++i) EXPECT_NEAR(bias_grad[i], bias_sum[i], 1e-3);
}

TEST(CpuLayers, MaxPoolRoutesGradientsToTheWinners) {
  CpuMaxPool2x2 pool(1, 4);
  const std::vector<float> x = {1, 2, 0, 0,  //
                                4, 3, 0, 9,  //
                                0, 0, 5, 0,  //
                                7, 0, 0, 6};
  std::vector<float> y(4);
  pool.Forward(x.data(), 1, y.data());
  EXPECT_EQ(y, (std::vector<float>{4, 9, 7, 6}));
  std::vector<float> dx(16);
  pool.Backward(std::vector<float>{1, 2, 3, 4}.data(), 1, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 4}));
}

TEST(CpuBackend, LearnsASeparableProblem) {
  auto backend = *MakeBackend("cpu");
  auto model = *backend->CreateModel(Small(), 11);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0, 0.3f);
  std::vector<float> x(300 * 6);
  std::vector<int32_t> y(300);
  for (int i = 0; i < 300; ++i) {
    y[i] = i % 3;
    for (int f = 0; f < 6; ++f) x[i * 6 + f] = (f / 2 == y[i] ? 2.0f : 0.0f) + noise(rng);
  }
  const float first = model->TrainStep(x.data(), y.data(), 300, 0.1f);
  float last = first;
  for (int i = 0; i < 200; ++i) last = model->TrainStep(x.data(), y.data(), 300, 0.1f);
  EXPECT_LT(last, first * 0.2f);
  EXPECT_GT(Accuracy(*model, x.data(), y.data(), 300, 6), 0.95);
}

}  // namespace
}  // namespace syncopate::compute
