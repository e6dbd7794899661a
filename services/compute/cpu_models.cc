#include "compute/cpu_models.h"

#include <algorithm>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "compute/cpu_layers.h"

namespace syncopate::compute {
namespace {

// Dense layers with ReLU between them, ending in logits; the MLP, and the CNN's head.
class DenseStack {
 public:
  DenseStack(int in, const std::vector<int>& hidden, int classes) {
    for (int width : hidden) {
      layers_.emplace_back(in, width);
      in = width;
    }
    layers_.emplace_back(in, classes);
    activations_.resize(layers_.size() + 1);
    gradients_.resize(layers_.size() + 1);
  }

  void Initialize(std::mt19937_64& rng) {
    for (CpuDense& layer : layers_) layer.Initialize(rng);
  }

  // Returns the logits (batch x classes).
  const float* Forward(const float* x, int batch) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      std::vector<float>& out = activations_[i + 1];
      out.resize(static_cast<size_t>(batch) * layers_[i].out());
      layers_[i].Forward(i == 0 ? x : activations_[i].data(), batch, out.data());
      if (i + 1 < layers_.size()) ReluForward(out.data(), out.size());
    }
    return activations_.back().data();
  }

  // Softmax cross-entropy on the last Forward's logits and backward through every layer; `dx`
  // (batch x input, may be null) receives the input's gradient. Returns the mean loss.
  float Backward(const float* x, const int32_t* labels, int batch, float* dx) {
    const int classes = layers_.back().out();
    gradients_.back().resize(static_cast<size_t>(batch) * classes);
    const float loss = SoftmaxCrossEntropy(activations_.back().data(), labels, batch, classes,
                                           gradients_.back().data());
    for (size_t i = layers_.size(); i-- > 0;) {
      const float* input = i == 0 ? x : activations_[i].data();
      float* dinput = dx;
      if (i > 0) {
        gradients_[i].resize(static_cast<size_t>(batch) * layers_[i].in());
        dinput = gradients_[i].data();
      }
      layers_[i].Backward(input, gradients_[i + 1].data(), batch, dinput);
      if (i > 0) ReluBackward(activations_[i].data(), dinput, gradients_[i].size());
    }
    return loss;
  }

  void SgdStep(float learning_rate) {
    for (CpuDense& layer : layers_) layer.SgdStep(learning_rate);
  }

  // Calls register_(spec, values) for every parameter: fc<i>/bias and fc<i>/weight (in x out).
  template <typename Register>
  void ForEachParameter(Register register_) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      CpuDense& l = layers_[i];
      register_(tensor::TensorSpec{absl::StrCat("fc", i + 1, "/bias"), {l.out()}}, &l.bias());
      register_(tensor::TensorSpec{absl::StrCat("fc", i + 1, "/weight"), {l.in(), l.out()}},
                &l.weight());
    }
  }

 private:
  std::vector<CpuDense> layers_;
  std::vector<std::vector<float>> activations_;  // [i + 1]: layer i's output
  std::vector<std::vector<float>> gradients_;
};

// What both models share: parameters by name, prediction by arg-max of the logits. Derived
// classes register their parameters once, when constructed (the vectors never move afterwards).
class CpuModel : public Model {
 public:
  std::vector<tensor::TensorSpec> Parameters() const override {
    std::vector<tensor::TensorSpec> specs;
    for (const auto& [name, p] : parameters_) specs.push_back(p.spec);
    return specs;
  }

  void ReadParameters(tensor::TensorMap* out) const override {
    out->clear();
    for (const auto& [name, p] : parameters_) (*out)[name] = *p.values;
  }

  absl::Status WriteParameters(const tensor::TensorMap& in) override {
    if (absl::Status s = CheckParameterWrite(Parameters(), in); !s.ok()) return s;
    for (const auto& [name, values] : in) *parameters_.at(name).values = values;
    return absl::OkStatus();
  }

  void Predict(const float* x, int n, int32_t* classes) override {
    const float* logits = Logits(x, n);
    const int k = classes_;
    for (int b = 0; b < n; ++b) {
      classes[b] = static_cast<int32_t>(std::max_element(logits + b * k, logits + (b + 1) * k) -
                                        (logits + b * k));
    }
  }

 protected:
  explicit CpuModel(int classes) : classes_(classes) {}
  void Register(tensor::TensorSpec spec, std::vector<float>* values) {
    const std::string name = spec.name;
    parameters_[name] = Parameter{std::move(spec), values};
  }
  void RegisterDense(DenseStack& stack) {
    stack.ForEachParameter([this](tensor::TensorSpec spec, std::vector<float>* values) {
      Register(std::move(spec), values);
    });
  }
  virtual const float* Logits(const float* x, int batch) = 0;

 private:
  struct Parameter {
    tensor::TensorSpec spec;
    std::vector<float>* values = nullptr;
  };
  const int classes_;
  std::map<std::string, Parameter> parameters_;  // name order
};

class CpuMlp final : public CpuModel {
 public:
  CpuMlp(const ModelSpec& spec, uint64_t seed)
      : CpuModel(spec.classes), stack_(spec.input_features, spec.hidden, spec.classes) {
    std::mt19937_64 rng(seed);
    stack_.Initialize(rng);
    RegisterDense(stack_);
  }

  float TrainStep(const float* x, const int32_t* labels, int batch, float learning_rate) override {
    stack_.Forward(x, batch);
    const float loss = stack_.Backward(x, labels, batch, nullptr);
    stack_.SgdStep(learning_rate);
    return loss;
  }

 private:
  const float* Logits(const float* x, int batch) override { return stack_.Forward(x, batch); }

  DenseStack stack_;
};

class CpuCnn final : public CpuModel {
 public:
  CpuCnn(const ModelSpec& spec, uint64_t seed)
      : CpuModel(spec.classes), stack_(HeadInputs(spec), spec.hidden, spec.classes) {
    int channels = spec.image_channels;
    int size = spec.image_size;
    for (int filters : spec.conv_filters) {
      convs_.emplace_back(channels, filters, spec.conv_kernel, size);
      pools_.emplace_back(filters, size);
      channels = filters;
      size /= 2;
    }
    conv_out_.resize(convs_.size());
    pool_out_.resize(convs_.size());
    std::mt19937_64 rng(seed);
    for (CpuConv2d& conv : convs_) conv.Initialize(rng);
    stack_.Initialize(rng);
    for (size_t i = 0; i < convs_.size(); ++i) {
      CpuConv2d& c = convs_[i];
      Register({absl::StrCat("conv", i + 1, "/bias"), {c.filters()}}, &c.bias());
      Register({absl::StrCat("conv", i + 1, "/weight"),
                {c.filters(), c.channels(), c.kernel(), c.kernel()}},
               &c.weight());
    }
    RegisterDense(stack_);
  }

  float TrainStep(const float* x, const int32_t* labels, int batch, float learning_rate) override {
    stack_.Forward(Features(x, batch), batch);
    const size_t block_count = convs_.size();
    std::vector<float> dfeatures(pool_out_.back().size());
    const float loss = stack_.Backward(pool_out_.back().data(), labels, batch, dfeatures.data());
    std::vector<float> dconv;
    for (size_t i = block_count; i-- > 0;) {
      dconv.resize(conv_out_[i].size());
      pools_[i].Backward(dfeatures.data(), batch, dconv.data());
      ReluBackward(conv_out_[i].data(), dconv.data(), dconv.size());
      const float* input = i == 0 ? x : pool_out_[i - 1].data();
      if (i == 0) {
        convs_[i].Backward(input, dconv.data(), batch, nullptr);
      } else {
        dfeatures.resize(pool_out_[i - 1].size());
        convs_[i].Backward(input, dconv.data(), batch, dfeatures.data());
      }
    }
    for (CpuConv2d& conv : convs_) conv.SgdStep(learning_rate);
    stack_.SgdStep(learning_rate);
    return loss;
  }

 private:
  static int HeadInputs(const ModelSpec& spec) {
    int size = spec.image_size;
    for (size_t i = 0; i < spec.conv_filters.size(); ++i) size /= 2;
    return spec.conv_filters.back() * size * size;
  }

  // Runs the conv blocks; returns the last block's pooled output.
  const float* Features(const float* x, int batch) {
    const float* input = x;
    for (size_t i = 0; i < convs_.size(); ++i) {
      const int size = convs_[i].size();
      conv_out_[i].resize(static_cast<size_t>(batch) * convs_[i].filters() * size * size);
      convs_[i].Forward(input, batch, conv_out_[i].data());
      ReluForward(conv_out_[i].data(), conv_out_[i].size());
      pool_out_[i].resize(conv_out_[i].size() / 4);
      pools_[i].Forward(conv_out_[i].data(), batch, pool_out_[i].data());
      input = pool_out_[i].data();
    }
    return input;
  }

  const float* Logits(const float* x, int batch) override {
    return stack_.Forward(Features(x, batch), batch);
  }

  std::vector<CpuConv2d> convs_;
  std::vector<CpuMaxPool2x2> pools_;
  std::vector<std::vector<float>> conv_out_;  // after ReLU
  std::vector<std::vector<float>> pool_out_;
  DenseStack stack_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> MakeCpuModel(const ModelSpec& spec, uint64_t seed) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  if (spec.architecture == "cnn") return std::make_unique<CpuCnn>(spec, seed);
  return std::make_unique<CpuMlp>(spec, seed);
}

}  // namespace syncopate::compute
