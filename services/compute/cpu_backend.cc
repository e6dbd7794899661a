// The backend registry, the CPU backend (models in cpu_models.h), and what every backend shares.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compute/backend.h"
#include "compute/cpu_models.h"
#include "compute/cuda_backend.h"
#include "compute/device.h"

namespace syncopate::compute {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                     uint64_t seed) override {
    return MakeCpuModel(spec, seed);
  }
};

}  // namespace

std::vector<std::string> SupportedModels() { return {"mlp", "cnn"}; }

absl::Status ValidateSpec(const ModelSpec& spec) {
  const std::vector<std::string> models = SupportedModels();
  if (std::find(models.begin(), models.end(), spec.architecture) == models.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown model '", spec.architecture, "' (supported: ", absl::StrJoin(models, ", "), ")"));
  }
  if (spec.input_features <= 0 || spec.classes <= 1 ||
      std::any_of(spec.hidden.begin(), spec.hidden.end(), [](int w) { return w <= 0; })) {
    return absl::InvalidArgumentError("model layer sizes must be positive");
  }
  if (spec.architecture != "cnn") return absl::OkStatus();
  if (spec.conv_filters.empty() || std::any_of(spec.conv_filters.begin(), spec.conv_filters.end(),
                                               [](int f) { return f <= 0; })) {
    return absl::InvalidArgumentError("cnn: conv filters must be positive, one per block");
  }
  if (spec.conv_kernel <= 0 || spec.conv_kernel % 2 == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cnn: the conv kernel must be odd, got ", spec.conv_kernel));
  }
  if (spec.image_channels <= 0 || spec.image_size <= 0 ||
      spec.image_channels * spec.image_size * spec.image_size != spec.input_features) {
    return absl::InvalidArgumentError(
        absl::StrCat("cnn: ", spec.image_channels, " x ", spec.image_size, " x ", spec.image_size,
                     " images do not have ", spec.input_features, " features"));
  }
  int size = spec.image_size;
  for (size_t i = 0; i < spec.conv_filters.size(); ++i) {
    if (size % 2 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cnn: block ", i + 1, " cannot pool a ", size, "-pixel image by 2"));
    }
    size /= 2;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& device,
                                                     std::string* fallback_reason) {
  absl::StatusOr<Device> parsed = ParseDevice(device);
  if (!parsed.ok()) return parsed.status();
  switch (parsed->kind) {
    case Device::Kind::kCpu:
      return std::make_unique<CpuBackend>();
    case Device::Kind::kCuda:
      return MakeCudaBackend(parsed->gpu);
    case Device::Kind::kAuto:
      break;
  }
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeCudaBackend(parsed->gpu);
  if (cuda.ok() || !absl::IsUnavailable(cuda.status())) return cuda;
  if (fallback_reason != nullptr) *fallback_reason = std::string(cuda.status().message());
  return std::make_unique<CpuBackend>();
}

absl::Status CheckParameterWrite(const std::vector<tensor::TensorSpec>& parameters,
                                 const tensor::TensorMap& in) {
  for (const auto& [name, values] : in) {
    auto it = std::find_if(parameters.begin(), parameters.end(),
                           [&name = name](const tensor::TensorSpec& p) { return p.name == name; });
    if (it == parameters.end())
      return absl::InvalidArgumentError("unknown parameter '" + name + "'");
    if (static_cast<size_t>(it->NumElements()) != values.size()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' has ", values.size(),
                                                     " values, expected ", it->NumElements()));
    }
  }
  return absl::OkStatus();
}

double Accuracy(Model& model, const float* x, const int32_t* labels, size_t n, int features) {
  constexpr int kBatch = 1000;
  std::vector<int32_t> predicted(kBatch);
  size_t correct = 0;
  for (size_t start = 0; start < n; start += kBatch) {
    const int count = static_cast<int>(std::min<size_t>(kBatch, n - start));
    model.Predict(x + start * features, count, predicted.data());
    for (int i = 0; i < count; ++i) correct += predicted[i] == labels[start + i];
  }
  return n == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace syncopate::compute
