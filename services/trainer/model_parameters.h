// A built-in model (compute::Model: the MLP or CNN on a backend) as the client library's
// Parameters, so the trainer drives it through the same library any user model goes through.
#ifndef SYNCOPATE_TRAINER_MODEL_PARAMETERS_H_
#define SYNCOPATE_TRAINER_MODEL_PARAMETERS_H_

#include <vector>

#include "client/parameters.h"
#include "compute/backend.h"

namespace syncopate::trainer {

// As thread-safe as the model (not): the library calls it under LocalModel's lock.
class ModelParameters final : public client::Parameters {
 public:
  // `model` must outlive this.
  explicit ModelParameters(compute::Model& model) : model_(model) {}

  std::vector<tensor::TensorSpec> Specs() const override { return model_.Parameters(); }
  absl::Status Read(tensor::TensorMap* out) const override {
    model_.ReadParameters(out);
    return absl::OkStatus();
  }
  absl::Status Write(const tensor::TensorMap& in) override { return model_.WriteParameters(in); }

 private:
  compute::Model& model_;
};

}  // namespace syncopate::trainer

#endif  // SYNCOPATE_TRAINER_MODEL_PARAMETERS_H_
