// The worker side of every mode: wait for the coordinator's Proceed, pull what it names (and
// rebase the local model onto it), take a local SGD step, push the delta since the last push the
// way the mode wants it, report the new clock. With overlap_communication (wbsp-overlap) a compute
// thread steps continuously while this loop pushes, reports and rebases beside it. In the
// peer-to-peer modes nothing is pushed: before each step the trainer sends its model to the peers
// the Proceed names, averages in the models its peers sent by the exchange deadline, and reports
// the transfers it measured.
#ifndef SYNCOPATE_TRAINER_WORKER_H_
#define SYNCOPATE_TRAINER_WORKER_H_

#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "client/links.h"
#include "client/local_model.h"
#include "compute/backend.h"
#include "data/dataset.h"
#include "trainer/background_multicast.h"
#include "trainer/model_parameters.h"
#include "trainer/peer_exchange.h"
#include "trainer/trace_writer.h"
#include "trainer/trainer_metrics.h"

namespace syncopate::trainer {

struct WorkerOptions {
  // Each step's compute time is stretched to slowdown x by waiting after it (counted as compute).
  double slowdown = 1.0;
  float learning_rate = 0.1f;
  int batch_size = 64;
  uint64_t seed = 1;
  // The evaluator evaluates at most this often, on the first eval_samples test examples.
  absl::Duration eval_interval = absl::Seconds(2);
  int eval_samples = 10000;
  // Give up when no directive arrives for this long (the coordinator is stuck or gone).
  absl::Duration directive_timeout = absl::Minutes(2);
  // Stop (and leave) after this many steps; 0: no limit.
  int64_t max_steps = 0;
};

// Totals since the trainer joined. compute + wait + push + pull + eval <= wall, except with
// overlapped communication, where compute runs beside the rest.
struct WorkerTimings {
  double compute = 0, wait = 0, push = 0, pull = 0, eval = 0;
};

// The peer-to-peer data plane a worker uses (owned by the caller).
struct PeerLink {
  ExchangeInbox& inbox;
  PeerSender& sender;
  BackgroundMulticast& multicast;  // selmcast-ssp
  TransferMeter& sent;
  TransferMeter& received;
};

class Worker {
 public:
  // All references must outlive the worker. `eval_model` (same architecture as `model`) evaluates
  // pulled models, so evaluation never touches the model being trained.
  Worker(WorkerOptions options, client::CoordinatorLink& session, client::StoreLink& store,
         compute::Model& model, compute::Model& eval_model, const data::Dataset& train,
         const data::Dataset& test, TrainerMetrics& metrics, TraceWriter& trace,
         const base::Clock& clock, PeerLink* peers = nullptr);

  // Trains until `stop` is notified, max_steps is reached or the coordinator says training is done
  // (then leaves cleanly: OK), or until a fatal error: ABORTED when evicted, UNAVAILABLE when the
  // coordinator or a store is gone, DEADLINE_EXCEEDED when no directive came within
  // directive_timeout. Blocks; call once.
  absl::Status Run(const absl::Notification& stop);

  // Thread-safe snapshot for heartbeats.
  v1::TrainerTimings Timings() const;

 private:
  // Compute and communication in turn.
  absl::Status RunSequential(const absl::Notification& stop);
  // A compute thread beside the communication loop.
  absl::Status RunOverlapped(const absl::Notification& stop);
  bool StepLimitReached() const;

  // Waits for the next Proceed, polling `stop`. nullopt when stopping or done.
  absl::StatusOr<std::optional<v1::Proceed>> AwaitProceed(const absl::Notification& stop);
  // Pulls what the Proceed names (nothing for pull.none), rebases the local model onto it and, if
  // this trainer evaluates, evaluates it. Returns the accuracy when it evaluated.
  absl::StatusOr<std::optional<double>> ApplyPull(const v1::Proceed& proceed);
  std::optional<double> MaybeEvaluate(const v1::Proceed& proceed, const tensor::TensorMap& pulled);
  float ComputeStep();
  // Pushes the delta since the last push as clock `new_clock` (not in peer-to-peer modes) and
  // reports it.
  absl::Status PushAndReport(int64_t new_clock, float loss, std::optional<double> accuracy);
  // Pushes the delta since the last push as clock `new_clock`.
  absl::Status Push(int64_t new_clock);
  // Peer-to-peer: exchanges models with peers (ExchangeInRound or, under selmcast-ssp,
  // ExchangeInBackground), makes the average the local model, reports the transfers, and evaluates
  // the result when this trainer evaluates.
  absl::StatusOr<std::optional<double>> Exchange(const v1::Proceed& proceed);
  struct ExchangeOutcome {
    int received = 0;   // peers' models averaged in
    int missed = 0;     // transfers that failed, or models due that did not arrive in time
    int preempted = 0;  // transfers cancelled by the coordinator or superseded
  };
  // Sends `own` to the receivers and waits (until `deadline`) for the senders' models of this
  // round; `own` becomes the average.
  absl::StatusOr<ExchangeOutcome> ExchangeInRound(const v1::PeerExchange& exchange,
                                                  tensor::TensorMap& own, absl::Time deadline);
  // Averages whatever models have arrived into `own`, then starts multicasting it in the
  // background (superseding the previous multicast); counts the transfers that ended meanwhile.
  absl::StatusOr<ExchangeOutcome> ExchangeInBackground(const v1::PeerExchange& exchange,
                                                       tensor::TensorMap& own, absl::Time deadline);
  void AddTime(double WorkerTimings::*field, absl::Duration d);

  const WorkerOptions options_;
  client::CoordinatorLink& session_;
  client::StoreLink& store_;
  compute::Model& trained_;     // stepped through model_
  ModelParameters parameters_;  // trained_ as the client library sees it
  client::LocalModel model_;
  compute::Model& eval_model_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  TrainerMetrics& metrics_;
  TraceWriter& trace_;
  const base::Clock& clock_;
  const absl::Time joined_at_;
  PeerLink* const peers_;
  v1::TransferReport transfers_;  // the last exchange's, for the next report

  // Used by the thread that computes.
  data::BatchSampler sampler_;
  std::vector<float> batch_x_;
  std::vector<int32_t> batch_y_;
  std::atomic<int64_t> steps_{0};
  std::atomic<float> last_loss_{0};
  // Used by the thread that communicates.
  uint64_t sequence_ = 0;
  std::optional<absl::Time> last_eval_;
  bool done_ = false;  // the coordinator said training is done

  mutable absl::Mutex mu_;
  WorkerTimings timings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::trainer

#endif  // SYNCOPATE_TRAINER_WORKER_H_
