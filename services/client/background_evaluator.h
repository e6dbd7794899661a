// Evaluation off the training path: the session hands over a snapshot of a model it received (a
// pulled round, a peers' average) and goes on; one thread of this class evaluates the latest
// snapshot and reports its accuracy with the time the snapshot was taken, so an evaluation never
// stalls the evaluating trainer and time to target is resolved to the snapshot, not to whenever
// the evaluation finished.
#ifndef SYNCOPATE_CLIENT_BACKGROUND_EVALUATOR_H_
#define SYNCOPATE_CLIENT_BACKGROUND_EVALUATOR_H_

#include <functional>
#include <optional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

// Thread-safe.
class BackgroundEvaluator {
 public:
  using Evaluate = std::function<double(const tensor::TensorMap& model)>;
  // The accuracy of the snapshot taken at `taken_at`, and how long evaluating it took.
  using Report = std::function<void(double accuracy, absl::Time taken_at, absl::Duration took)>;

  // Starts the thread. `evaluate` and `report` run on it, one snapshot at a time; `now` times them.
  BackgroundEvaluator(Evaluate evaluate, Report report, std::function<absl::Time()> now);
  ~BackgroundEvaluator();  // Stop()

  // Queues `model`, taken at `taken_at`, for evaluation; a snapshot still waiting is dropped for
  // it (the latest model is the one worth evaluating).
  void Submit(tensor::TensorMap model, absl::Time taken_at);
  // Waits up to `timeout` until nothing is waiting or being evaluated; false on timeout.
  bool AwaitIdle(absl::Duration timeout);
  // Drops what waits, lets an evaluation in progress finish, and joins the thread. Idempotent.
  void Stop();

 private:
  struct Snapshot {
    tensor::TensorMap model;
    absl::Time taken_at;
  };
  void Run();

  const Evaluate evaluate_;
  const Report report_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  std::optional<Snapshot> waiting_ ABSL_GUARDED_BY(mu_);
  bool evaluating_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_BACKGROUND_EVALUATOR_H_
