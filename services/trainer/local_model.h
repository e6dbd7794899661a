// The trainer's model with the bookkeeping local SGD needs: the base the next pushed delta is
// measured from, and the pushed deltas that no pulled round contains yet. A pull is a rebase:
//
//   new_local = pulled + (own pending deltas the round does not contain) + (local - base)
//
// so neither the local steps taken since the last push nor the trainer's own pushes still waiting
// for a later round are lost (the published WBSP code loses both). For modes without pending
// pushes and without steps since the push, this is exactly "load the pulled model".
#ifndef SYNCOPATE_TRAINER_LOCAL_MODEL_H_
#define SYNCOPATE_TRAINER_LOCAL_MODEL_H_

#include <cstdint>
#include <deque>
#include <optional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "compute/backend.h"
#include "tensor/tensor.h"

namespace syncopate::trainer {

// Thread-safe: a compute thread may step it while another thread takes deltas and rebases.
class LocalModel {
 public:
  // `model` must outlive this; its current parameters become the base.
  explicit LocalModel(compute::Model& model);

  // One SGD step (see compute::Model::TrainStep).
  float TrainStep(const float* x, const int32_t* labels, int batch, float learning_rate);

  // The change since the last TakeDelta or Rebase; the base moves to the current model. With a
  // `pending_clock` (round pushes) the delta is also kept until a pulled round includes it.
  tensor::TensorMap TakeDelta(std::optional<int64_t> pending_clock);

  // Rebases onto `pulled` (see above). `includes_clock`: the trainer's pushes up to this clock are
  // in `pulled` (-1: none). INVALID_ARGUMENT (nothing changes) when `pulled` lacks a parameter or
  // has a wrong size.
  absl::Status Rebase(const tensor::TensorMap& pulled, int64_t includes_clock);

  // Steps since the last TakeDelta.
  int64_t unpushed_steps() const;
  size_t pending_deltas() const;
  void Read(tensor::TensorMap* out) const;

 private:
  struct Pending {
    int64_t clock;
    tensor::TensorMap delta;
  };

  compute::Model& model_;
  mutable absl::Mutex mu_;
  tensor::TensorMap base_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  int64_t unpushed_steps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace syncopate::trainer

#endif  // SYNCOPATE_TRAINER_LOCAL_MODEL_H_
