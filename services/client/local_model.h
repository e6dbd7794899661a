// A trainer's parameters with the bookkeeping local SGD needs: the base the next pushed delta is
// measured from, and the pushed deltas that no pulled round contains yet. A pull is a rebase:
//
//   new_local = pulled + (own pending deltas the round does not contain) + (local - base)
//
// so neither the local steps taken since the last push nor the trainer's own pushes still waiting
// for a later round are lost (the published WBSP code loses both). For modes without pending
// pushes and without steps since the push, this is exactly "load the pulled model".
#ifndef SYNCOPATE_CLIENT_LOCAL_MODEL_H_
#define SYNCOPATE_CLIENT_LOCAL_MODEL_H_

#include <cstdint>
#include <deque>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/parameters.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

// Thread-safe: a compute thread may step it while another thread takes deltas and rebases.
class LocalModel {
 public:
  // `parameters` must outlive this and change only through Step; their current values become
  // the base.
  explicit LocalModel(Parameters& parameters);

  // Runs `step`, one training step that updates the parameters (a forward, backward and optimizer
  // step of the caller's), and counts it. `step` runs with the lock held: TakeDelta, Rebase and
  // Read on other threads wait until it returns, and `step` must not call this object (the lock is
  // not re-entrant). Returns what `step` returns (its loss, say).
  float Step(absl::FunctionRef<float()> step);

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

  Parameters& parameters_;
  mutable absl::Mutex mu_;
  tensor::TensorMap base_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  int64_t unpushed_steps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_LOCAL_MODEL_H_
