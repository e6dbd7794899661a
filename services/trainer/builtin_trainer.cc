#include "trainer/builtin_trainer.h"

#include <algorithm>

#include "base/status_macros.h"
#include "tensor/model_file.h"

namespace syncopate::trainer {

BuiltinTrainer::BuiltinTrainer(BuiltinOptions options, compute::Model& model,
                               compute::Model& eval_model, const data::Dataset& train,
                               const data::Dataset& test)
    : options_(options),
      model_(model),
      parameters_(model),
      eval_model_(eval_model),
      train_(train),
      test_(test),
      sampler_(train.size(), options.batch_size, options.seed) {}

absl::Status BuiltinTrainer::SaveModel(const std::vector<std::string>& paths) const {
  tensor::TensorMap values;
  RETURN_IF_ERROR(parameters_.Read(&values));
  ASSIGN_OR_RETURN(const tensor::Model model, tensor::ModelOf(parameters_.Specs(), values));
  for (const std::string& path : paths) RETURN_IF_ERROR(tensor::WriteModel(model, path));
  return absl::OkStatus();
}

double BuiltinTrainer::Evaluate(const tensor::TensorMap& model) {
  if (!eval_model_.WriteParameters(model).ok()) return 0;
  const size_t n = std::min<size_t>(test_.size(), static_cast<size_t>(options_.eval_samples));
  return compute::Accuracy(eval_model_, test_.images.data(), test_.labels.data(), n,
                           test_.features);
}

absl::Status BuiltinTrainer::Run(client::JobClient& job) {
  RETURN_IF_ERROR(job.Start());
  for (bool more = true; more;) {
    const int n = sampler_.Next(train_, &batch_x_, &batch_y_);
    const float loss =
        model_.TrainStep(batch_x_.data(), batch_y_.data(), n, options_.learning_rate);
    ASSIGN_OR_RETURN(more, job.Step(loss));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::trainer
