// The compute-backend seam: a trainer sees a Model (parameters in, one SGD step, predictions out)
// created by a Backend: CPU (OpenBLAS, cpu_models.h) or CUDA (cuBLAS + cuDNN, cuda_models.h, in
// builds with SYNCOPATE_CUDA, loaded as a plugin: cuda_backend.h). Both build the same
// architectures with the same parameter names, layouts and initial values.
#ifndef SYNCOPATE_COMPUTE_BACKEND_H_
#define SYNCOPATE_COMPUTE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensor/tensor_spec.h"

namespace syncopate::compute {

struct ModelSpec {
  // "mlp": input -> [dense + ReLU]* -> dense -> softmax.
  // "cnn": image -> [conv + ReLU + 2x2 max pool]* -> [dense + ReLU]* -> dense -> softmax.
  std::string architecture = "mlp";
  int input_features = 784;
  std::vector<int> hidden = {128};
  int classes = 10;
  // cnn: input_features = image_channels * image_size^2 (NCHW); one conv block per entry of
  // conv_filters, each "same"-padded with an odd conv_kernel and halving the size.
  int image_channels = 1;
  int image_size = 28;
  std::vector<int> conv_filters = {16, 32};
  int conv_kernel = 5;
};

// The architectures every backend builds, in documentation order.
std::vector<std::string> SupportedModels();

// INVALID_ARGUMENT for an unknown architecture, a non-positive size, or a cnn whose image does
// not match input_features, whose kernel is even, or whose image cannot be halved once per block.
absl::Status ValidateSpec(const ModelSpec& spec);

// A model resident on a backend. Not thread-safe: one trainer thread drives it.
class Model {
 public:
  virtual ~Model() = default;

  // Names and shapes of the trainable parameters, in name order.
  virtual std::vector<tensor::TensorSpec> Parameters() const = 0;
  // Host copies of all parameters (replaces `out`'s contents).
  virtual void ReadParameters(tensor::TensorMap* out) const = 0;
  // Sets the parameters named in `in`. INVALID_ARGUMENT (model unchanged) for an unknown name or a
  // wrong element count; parameters not named stay as they are.
  virtual absl::Status WriteParameters(const tensor::TensorMap& in) = 0;
  // Forward, backward and an SGD update on `batch` examples (`x`: batch x input_features,
  // row-major). Returns the mean cross-entropy loss before the update.
  virtual float TrainStep(const float* x, const int32_t* labels, int batch,
                          float learning_rate) = 0;
  // The most likely class of each of `n` examples.
  virtual void Predict(const float* x, int n, int32_t* classes) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda".
  virtual std::string name() const = 0;
  // For logs: the name and, on a GPU, which device it is.
  virtual std::string description() const { return name(); }
  // A freshly initialised model; the same spec and seed give bit-identical parameters on every
  // process. INVALID_ARGUMENT for an unknown architecture or a bad spec.
  virtual absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                             uint64_t seed) = 0;
};

// The backend for `device`, spelt as ParseDevice (device.h) reads it:
//   "cpu"             the CPU backend;
//   "cuda", "cuda:N"  the CUDA backend on GPU 0 or N (the plugin cuda_backend.h loads), or
//                     CudaDeviceStatus's error: UNAVAILABLE saying why no such GPU can be used;
//   "auto"            CUDA on GPU 0 when it is usable, else the CPU backend, with the reason in
//                     `*fallback_reason` (when given); other CUDA errors are returned, not
//                     papered over.
// INVALID_ARGUMENT for any other spelling.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& device,
                                                     std::string* fallback_reason = nullptr);

// What every Model::WriteParameters checks before it changes anything: INVALID_ARGUMENT unless
// every tensor in `in` is one of `parameters`, with its element count.
absl::Status CheckParameterWrite(const std::vector<tensor::TensorSpec>& parameters,
                                 const tensor::TensorMap& in);

// Fraction of `n` examples whose predicted class equals the label, evaluated in batches.
double Accuracy(Model& model, const float* x, const int32_t* labels, size_t n, int features);

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_BACKEND_H_
