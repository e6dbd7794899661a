// The CPU backend: an MLP assembled from the OpenBLAS layers in cpu_layers.h.
#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "compute/backend.h"
#include "compute/cpu_layers.h"

namespace syncopate::compute {
namespace {

class CpuMlp final : public Model {
 public:
  CpuMlp(const ModelSpec& spec, uint64_t seed) {
    std::mt19937_64 rng(seed);
    int in = spec.input_features;
    for (int width : spec.hidden) {
      layers_.emplace_back(in, width);
      in = width;
    }
    layers_.emplace_back(in, spec.classes);
    for (CpuDense& layer : layers_) layer.Initialize(rng);
    activations_.resize(layers_.size() + 1);
    gradients_.resize(layers_.size() + 1);
  }

  std::vector<tensor::TensorSpec> Parameters() const override {
    std::vector<tensor::TensorSpec> specs;
    for (size_t i = 0; i < layers_.size(); ++i) {
      specs.push_back({Name(i, "bias"), {layers_[i].out()}});
      specs.push_back({Name(i, "weight"), {layers_[i].in(), layers_[i].out()}});
    }
    return specs;
  }

  void ReadParameters(tensor::TensorMap* out) const override {
    out->clear();
    for (size_t i = 0; i < layers_.size(); ++i) {
      (*out)[Name(i, "weight")] = layers_[i].weight();
      (*out)[Name(i, "bias")] = layers_[i].bias();
    }
  }

  absl::Status WriteParameters(const tensor::TensorMap& in) override {
    for (const auto& [name, values] : in) {
      std::vector<float>* target = Find(name);
      if (target == nullptr) return absl::InvalidArgumentError("unknown parameter '" + name + "'");
      if (target->size() != values.size()) {
        return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' has ", values.size(),
                                                       " values, expected ", target->size()));
      }
    }
    for (const auto& [name, values] : in) *Find(name) = values;
    return absl::OkStatus();
  }

  float TrainStep(const float* x, const int32_t* labels, int batch, float learning_rate) override {
    Forward(x, batch);
    const int classes = layers_.back().out();
    gradients_.back().resize(static_cast<size_t>(batch) * classes);
    const float loss = SoftmaxCrossEntropy(activations_.back().data(), labels, batch, classes,
                                           gradients_.back().data());
    for (size_t i = layers_.size(); i-- > 0;) {
      const float* input = i == 0 ? x : activations_[i].data();
      float* dinput = nullptr;
      if (i > 0) {
        gradients_[i].resize(static_cast<size_t>(batch) * layers_[i].in());
        dinput = gradients_[i].data();
      }
      layers_[i].Backward(input, gradients_[i + 1].data(), batch, dinput);
      if (i > 0) ReluBackward(activations_[i].data(), dinput, gradients_[i].size());
    }
    for (CpuDense& layer : layers_) layer.SgdStep(learning_rate);
    return loss;
  }

  void Predict(const float* x, int n, int32_t* classes) override {
    Forward(x, n);
    const int k = layers_.back().out();
    const float* logits = activations_.back().data();
    for (int b = 0; b < n; ++b) {
      classes[b] = static_cast<int32_t>(std::max_element(logits + b * k, logits + (b + 1) * k) -
                                        (logits + b * k));
    }
  }

 private:
  static std::string Name(size_t layer, const char* what) {
    return absl::StrCat("fc", layer + 1, "/", what);
  }

  std::vector<float>* Find(const std::string& name) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      if (name == Name(i, "weight")) return &layers_[i].weight();
      if (name == Name(i, "bias")) return &layers_[i].bias();
    }
    return nullptr;
  }

  // activations_[i + 1] = layer i's output (ReLU applied for hidden layers).
  void Forward(const float* x, int batch) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      std::vector<float>& out = activations_[i + 1];
      out.resize(static_cast<size_t>(batch) * layers_[i].out());
      layers_[i].Forward(i == 0 ? x : activations_[i].data(), batch, out.data());
      if (i + 1 < layers_.size()) ReluForward(out.data(), out.size());
    }
  }

  std::vector<CpuDense> layers_;
  std::vector<std::vector<float>> activations_;
  std::vector<std::vector<float>> gradients_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                     uint64_t seed) override {
    if (spec.architecture != "mlp") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown model '", spec.architecture, "' (supported: mlp)"));
    }
    if (spec.input_features <= 0 || spec.classes <= 1 ||
        std::any_of(spec.hidden.begin(), spec.hidden.end(), [](int w) { return w <= 0; })) {
      return absl::InvalidArgumentError("model layer sizes must be positive");
    }
    return std::make_unique<CpuMlp>(spec, seed);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& device) {
  if (device == "cpu" || device == "auto") return std::make_unique<CpuBackend>();
  return absl::InvalidArgumentError(
      absl::StrCat("device '", device, "' is not supported by this build (supported: cpu, auto)"));
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
