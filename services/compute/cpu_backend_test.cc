#include <cmath>
#include <random>

#include "compute/backend.h"
#include "compute/cpu_layers.h"
#include "gtest/gtest.h"

namespace syncopate::compute {
namespace {

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

// The analytic gradient of the whole MLP matches central finite differences, checked through the
// update: TrainStep with learning rate 1 subtracts exactly the gradient.
TEST(CpuBackend, GradientMatchesFiniteDifferences) {
  auto backend = *MakeBackend("cpu");
  auto model = *backend->CreateModel(Small(), 7);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(4 * 6);
  for (float& v : x) v = u(rng);
  std::vector<int32_t> y = {0, 2, 1, 2};

  tensor::TensorMap before, after;
  model->ReadParameters(&before);
  auto loss_at = [&](const tensor::TensorMap& params) {
    auto probe = *backend->CreateModel(Small(), 7);
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
      EXPECT_NEAR(analytic, numeric, 2e-3) << name << "[" << i << "]";
    }
  }
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
