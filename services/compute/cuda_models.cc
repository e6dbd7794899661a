#include "compute/cuda_models.h"

#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compute/cpu_models.h"
#include "compute/cuda_kernels.h"
#include "compute/cuda_layers.h"
#include "compute/cuda_support.h"

namespace syncopate::compute::cuda {
namespace {

// Both architectures as one network: zero or more conv blocks (conv + ReLU + 2x2 max pool), then
// dense layers with ReLU between them. An mlp is the network without conv blocks.
class CudaNetwork final : public Model {
 public:
  // `initial` (from the CPU model with the same spec and seed) gives the names, shapes and values.
  static absl::StatusOr<std::unique_ptr<CudaNetwork>> Create(const ModelSpec& spec,
                                                             const Model& initial, int device) {
    auto context = CudaContext::Create(device);
    if (!context.ok()) return context.status();
    std::unique_ptr<CudaNetwork> network(new CudaNetwork(std::move(*context), spec.classes));
    tensor::TensorMap values;
    initial.ReadParameters(&values);
    if (absl::Status s = network->Allocate(initial.Parameters()); !s.ok()) return s;
    network->Build(spec);
    if (absl::Status s = network->WriteParameters(values); !s.ok()) return s;
    return network;
  }

  ~CudaNetwork() override { cudaSetDevice(context_->device()); }  // buffers free on their device

  std::vector<tensor::TensorSpec> Parameters() const override {
    std::vector<tensor::TensorSpec> specs;
    for (const auto& [name, slot] : slots_) specs.push_back(slot.spec);
    return specs;
  }

  void ReadParameters(tensor::TensorMap* out) const override {
    context_->Activate();
    CheckCuda(cudaMemcpyAsync(host_parameters_.data(), parameters_.data(), total_ * sizeof(float),
                              cudaMemcpyDeviceToHost, context_->stream()),
              "parameters to host");
    context_->Synchronize();
    out->clear();
    for (const auto& [name, slot] : slots_) {
      const float* begin = host_parameters_.data() + slot.offset;
      (*out)[name].assign(begin, begin + slot.count);
    }
  }

  absl::Status WriteParameters(const tensor::TensorMap& in) override {
    if (absl::Status s = CheckParameterWrite(Parameters(), in); !s.ok()) return s;
    context_->Activate();
    for (const auto& [name, values] : in) {
      const Slot& slot = slots_.at(name);
      float* staged = host_parameters_.data() + slot.offset;
      std::memcpy(staged, values.data(), slot.count * sizeof(float));
      CheckCuda(
          cudaMemcpyAsync(parameters_.data() + slot.offset, staged, slot.count * sizeof(float),
                          cudaMemcpyHostToDevice, context_->stream()),
          "parameters to device");
    }
    context_->Synchronize();  // the pinned staging buffer is reused by the next call
    return absl::OkStatus();
  }

  float TrainStep(const float* x, const int32_t* labels, int batch, float learning_rate) override {
    if (batch <= 0) return 0.0f;
    context_->Activate();
    cudaStream_t stream = context_->stream();
    const float* input = Upload(x, batch);
    const size_t b = static_cast<size_t>(batch);
    std::memcpy(host_labels_.Reserve(b), labels, b * sizeof(int32_t));
    CheckCuda(cudaMemcpyAsync(labels_.Reserve(b), host_labels_.data(), b * sizeof(int32_t),
                              cudaMemcpyHostToDevice, stream),
              "labels to device");

    const float* logits = Forward(input, batch);
    float* dlogits = dense_grad_.back().Reserve(b * classes_);
    LaunchSoftmaxCrossEntropy(logits, labels_.data(), batch, classes_, losses_.Reserve(b), dlogits,
                              stream);
    Backward(input, batch);
    LaunchSgdStep(parameters_.data(), gradients_.data(), total_, learning_rate, stream);

    CheckCuda(cudaMemcpyAsync(host_losses_.Reserve(b), losses_.data(), b * sizeof(float),
                              cudaMemcpyDeviceToHost, stream),
              "losses to host");
    context_->Synchronize();
    CheckCuda(cudaGetLastError(), "training step kernels");
    double sum = 0;
    for (size_t i = 0; i < b; ++i) sum += host_losses_.data()[i];
    return static_cast<float>(sum / batch);
  }

  void Predict(const float* x, int n, int32_t* classes) override {
    if (n <= 0) return;
    context_->Activate();
    const size_t count = static_cast<size_t>(n);
    const float* logits = Forward(Upload(x, n), n);
    LaunchArgMax(logits, n, classes_, classes_out_.Reserve(count), context_->stream());
    CheckCuda(cudaMemcpyAsync(host_classes_.Reserve(count), classes_out_.data(),
                              count * sizeof(int32_t), cudaMemcpyDeviceToHost, context_->stream()),
              "predictions to host");
    context_->Synchronize();
    CheckCuda(cudaGetLastError(), "prediction kernels");
    std::memcpy(classes, host_classes_.data(), count * sizeof(int32_t));
  }

 private:
  struct Slot {
    tensor::TensorSpec spec;
    size_t offset = 0;
    size_t count = 0;
  };

  CudaNetwork(std::unique_ptr<CudaContext> context, int classes)
      : context_(std::move(context)), classes_(classes), relu_(*context_) {}

  // Lays the parameters out in name order in one arena (and the gradients alike).
  absl::Status Allocate(const std::vector<tensor::TensorSpec>& specs) {
    for (const tensor::TensorSpec& spec : specs) {
      const size_t count = static_cast<size_t>(spec.NumElements());
      slots_[spec.name] = Slot{spec, total_, count};
      total_ += count;
    }
    if (absl::Status s = parameters_.TryReserve(total_); !s.ok()) return s;
    if (absl::Status s = gradients_.TryReserve(total_); !s.ok()) return s;
    host_parameters_.Reserve(total_);
    return absl::OkStatus();
  }

  ParameterSlots SlotsOf(const std::string& layer) {
    const Slot& w = slots_.at(layer + "/weight");
    const Slot& b = slots_.at(layer + "/bias");
    return ParameterSlots{parameters_.data() + w.offset, parameters_.data() + b.offset,
                          gradients_.data() + w.offset, gradients_.data() + b.offset};
  }

  void Build(const ModelSpec& spec) {
    int channels = spec.image_channels;
    int size = spec.image_size;
    int features = spec.input_features;
    if (spec.architecture == "cnn") {
      for (size_t i = 0; i < spec.conv_filters.size(); ++i) {
        const int filters = spec.conv_filters[i];
        Block& block = blocks_.emplace_back();
        block.conv = std::make_unique<CudaConv2d>(*context_, channels, filters, spec.conv_kernel,
                                                  size, SlotsOf(absl::StrCat("conv", i + 1)));
        block.pool = std::make_unique<CudaMaxPool2x2>(*context_, filters, size);
        block.size = size;
        channels = filters;
        size /= 2;
      }
      features = channels * size * size;
    }
    for (int width : spec.hidden) {
      dense_.emplace_back(*context_, features, width,
                          SlotsOf(absl::StrCat("fc", dense_.size() + 1)));
      features = width;
    }
    dense_.emplace_back(*context_, features, spec.classes,
                        SlotsOf(absl::StrCat("fc", dense_.size() + 1)));
    dense_out_.resize(dense_.size());
    dense_grad_.resize(dense_.size());
  }

  // Stages `n` host examples in pinned memory and queues their copy; returns the device copy.
  const float* Upload(const float* x, int n) {
    const size_t values = static_cast<size_t>(n) * input_features();
    std::memcpy(host_input_.Reserve(values), x, values * sizeof(float));
    CheckCuda(cudaMemcpyAsync(input_.Reserve(values), host_input_.data(), values * sizeof(float),
                              cudaMemcpyHostToDevice, context_->stream()),
              "inputs to device");
    return input_.data();
  }

  int input_features() const {
    if (blocks_.empty()) return dense_.front().in();
    const Block& first = blocks_.front();
    return first.conv->channels() * first.size * first.size;
  }

  // Queues the forward pass; returns the logits (batch x classes).
  const float* Forward(const float* x, int batch) {
    const size_t b = static_cast<size_t>(batch);
    const float* in = x;
    for (Block& block : blocks_) {
      const int plane = block.size * block.size;
      const int conv_values = block.conv->filters() * plane;
      float* conv = block.conv_out.Reserve(b * conv_values);
      block.conv->Forward(in, batch, conv);
      relu_.Forward(conv, batch, conv_values);
      float* pooled = block.pool_out.Reserve(b * conv_values / 4);
      block.pool->Forward(conv, batch, pooled);
      in = pooled;
    }
    for (size_t j = 0; j < dense_.size(); ++j) {
      float* out = dense_out_[j].Reserve(b * dense_[j].out());
      dense_[j].Forward(in, batch, out);
      if (j + 1 < dense_.size()) relu_.Forward(out, batch, dense_[j].out());
      in = out;
    }
    return in;
  }

  // Queues the backward pass from the logits' gradient in dense_grad_.back(); fills gradients_.
  void Backward(const float* x, int batch) {
    const size_t b = static_cast<size_t>(batch);
    const float* features = blocks_.empty() ? x : blocks_.back().pool_out.data();
    for (size_t j = dense_.size(); j-- > 0;) {
      const float* input = j == 0 ? features : dense_out_[j - 1].data();
      float* dinput = nullptr;
      if (j > 0) {
        dinput = dense_grad_[j - 1].Reserve(b * dense_[j].in());
      } else if (!blocks_.empty()) {
        dinput = blocks_.back().pool_grad.Reserve(b * dense_[0].in());
      }
      dense_[j].Backward(input, dense_grad_[j].data(), batch, dinput);
      if (j > 0) relu_.Backward(dense_out_[j - 1].data(), dinput, batch, dense_[j].in());
    }
    for (size_t i = blocks_.size(); i-- > 0;) {
      Block& block = blocks_[i];
      const int conv_values = block.conv->filters() * block.size * block.size;
      float* dconv = conv_grad_.Reserve(b * conv_values);
      block.pool->Backward(block.conv_out.data(), block.pool_out.data(), block.pool_grad.data(),
                           batch, dconv);
      relu_.Backward(block.conv_out.data(), dconv, batch, conv_values);
      const float* input = i == 0 ? x : blocks_[i - 1].pool_out.data();
      float* dinput = nullptr;
      if (i > 0) {
        dinput =
            blocks_[i - 1].pool_grad.Reserve(b * block.conv->channels() * block.size * block.size);
      }
      block.conv->Backward(input, dconv, batch, dinput);
    }
  }

  // One conv block and its activations (conv_out after ReLU) and the gradient of its output.
  struct Block {
    std::unique_ptr<CudaConv2d> conv;
    std::unique_ptr<CudaMaxPool2x2> pool;
    int size = 0;  // input image size
    DeviceBuffer<float> conv_out, pool_out, pool_grad;
  };

  std::unique_ptr<CudaContext> context_;
  const int classes_;
  std::map<std::string, Slot> slots_;  // name order
  size_t total_ = 0;
  DeviceBuffer<float> parameters_, gradients_;
  PinnedBuffer<float> host_parameters_;  // staging for Read/WriteParameters

  std::vector<Block> blocks_;
  std::vector<CudaDense> dense_;
  CudaRelu relu_;
  std::vector<DeviceBuffer<float>> dense_out_, dense_grad_;  // [j]: dense layer j's output
  DeviceBuffer<float> conv_grad_;

  PinnedBuffer<float> host_input_, host_losses_;
  PinnedBuffer<int32_t> host_labels_, host_classes_;
  DeviceBuffer<float> input_, losses_;
  DeviceBuffer<int32_t> labels_, classes_out_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> MakeCudaModel(const ModelSpec& spec, uint64_t seed,
                                                     int device) {
  // The CPU model is built first: it validates the spec and draws the initial values, so both
  // backends start every trainer from bit-identical parameters.
  auto initial = MakeCpuModel(spec, seed);
  if (!initial.ok()) return initial.status();
  auto network = CudaNetwork::Create(spec, **initial, device);
  if (!network.ok()) return network.status();
  return std::unique_ptr<Model>(std::move(*network));
}

}  // namespace syncopate::compute::cuda
