// The built-in models' training loop (the MLP or CNN of compute/, on its shard of Fashion-MNIST)
// on top of the client library: one model adapter among any a user brings. The protocol is all
// the session's (client/session.h); this draws batches, takes SGD steps and evaluates.
#ifndef SYNCOPATE_TRAINER_BUILTIN_TRAINER_H_
#define SYNCOPATE_TRAINER_BUILTIN_TRAINER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/job_client.h"
#include "client/session.h"
#include "compute/backend.h"
#include "data/dataset.h"
#include "trainer/model_parameters.h"

namespace syncopate::trainer {

struct BuiltinOptions {
  float learning_rate = 0.1f;
  int batch_size = 64;
  uint64_t seed = 1;         // of the batch order
  int eval_samples = 10000;  // the first this many test examples
};

// Not thread-safe, except Evaluate (it touches only the evaluation model).
class BuiltinTrainer {
 public:
  // `eval_model` has `model`'s architecture and evaluates models the session receives, so
  // evaluation never touches the model being trained. All references must outlive this.
  BuiltinTrainer(BuiltinOptions options, compute::Model& model, compute::Model& eval_model,
                 const data::Dataset& train, const data::Dataset& test);

  // The trained model as the client library sees it.
  client::Parameters& parameters() { return parameters_; }
  // Test accuracy of `model` (client::SessionOptions::evaluate); 0 for a model that does not fit.
  double Evaluate(const tensor::TensorMap& model);
  // Starts `session` (over parameters()) and trains until it ends; its outcome.
  absl::Status Run(client::JobClient& job);
  // Writes the model as it is now to each of `paths` (.npz or .pt: tensor/model_file.h).
  absl::Status SaveModel(const std::vector<std::string>& paths) const;

 private:
  const BuiltinOptions options_;
  compute::Model& model_;
  ModelParameters parameters_;
  compute::Model& eval_model_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  data::BatchSampler sampler_;
  std::vector<float> batch_x_;
  std::vector<int32_t> batch_y_;
};

}  // namespace syncopate::trainer

#endif  // SYNCOPATE_TRAINER_BUILTIN_TRAINER_H_
