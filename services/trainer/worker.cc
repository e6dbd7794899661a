#include "trainer/worker.h"

#include <algorithm>
#include <thread>

#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace syncopate::trainer {

Worker::Worker(WorkerOptions options, client::CoordinatorLink& session, client::StoreLink& store,
               compute::Model& model, compute::Model& eval_model, const data::Dataset& train,
               const data::Dataset& test, TrainerMetrics& metrics, TraceWriter& trace,
               const base::Clock& clock, PeerLink* peers)
    : options_(options),
      session_(session),
      store_(store),
      trained_(model),
      parameters_(model),
      model_(parameters_),
      eval_model_(eval_model),
      train_(train),
      test_(test),
      metrics_(metrics),
      trace_(trace),
      clock_(clock),
      joined_at_(clock.Now()),
      peers_(peers),
      sampler_(train.size(), options.batch_size, options.seed) {}

void Worker::AddTime(double WorkerTimings::*field, absl::Duration d) {
  absl::MutexLock lock(&mu_);
  timings_.*field += absl::ToDoubleSeconds(d);
}

v1::TrainerTimings Worker::Timings() const {
  const double wall = absl::ToDoubleSeconds(clock_.Now() - joined_at_);
  absl::MutexLock lock(&mu_);
  v1::TrainerTimings t;
  t.set_compute_seconds(timings_.compute);
  t.set_wait_seconds(timings_.wait);
  t.set_communication_seconds(timings_.push + timings_.pull);
  t.set_wall_seconds(wall);
  metrics_.compute_time_ratio.Set(wall > 0 ? timings_.compute / wall : 0);
  return t;
}

absl::StatusOr<std::optional<v1::Proceed>> Worker::AwaitProceed(const absl::Notification& stop) {
  const absl::Time start = clock_.Now();
  while (!stop.HasBeenNotified()) {
    absl::StatusOr<v1::Proceed> proceed = session_.WaitProceed(absl::Milliseconds(200));
    if (proceed.ok()) {
      const absl::Duration waited = clock_.Now() - start;
      AddTime(&WorkerTimings::wait, waited);
      metrics_.wait_seconds.Increment(absl::ToDoubleSeconds(waited));
      metrics_.wait_duration.Observe(absl::ToDoubleSeconds(waited));
      return std::optional<v1::Proceed>(*proceed);
    }
    if (absl::IsOutOfRange(proceed.status())) {
      spdlog::info("{}", std::string(proceed.status().message()));
      done_ = true;
      return std::optional<v1::Proceed>();
    }
    if (proceed.status().code() != absl::StatusCode::kDeadlineExceeded) return proceed.status();
    if (clock_.Now() - start > options_.directive_timeout) {
      return absl::DeadlineExceededError("no directive from the coordinator within " +
                                         absl::FormatDuration(options_.directive_timeout));
    }
  }
  return std::optional<v1::Proceed>();
}

absl::StatusOr<std::optional<double>> Worker::ApplyPull(const v1::Proceed& proceed) {
  if (proceed.pull().has_none()) return std::optional<double>();
  const absl::Time start = clock_.Now();
  const int64_t round = proceed.pull().has_round() ? proceed.pull().round() : -1;
  ASSIGN_OR_RETURN(client::PulledModel pulled, store_.Pull(round));
  RETURN_IF_ERROR(model_.Rebase(pulled.tensors, round >= 0 ? proceed.pull().includes_clock() : -1));
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::pull, took);
  metrics_.pull_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.pull_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.pull_bytes.Increment(static_cast<double>(pulled.bytes));
  if (round >= 0) trace_.Record("pull", {{"round", round}, {"checksums", pulled.checksums}});
  return MaybeEvaluate(proceed, pulled.tensors);
}

std::optional<double> Worker::MaybeEvaluate(const v1::Proceed& proceed,
                                            const tensor::TensorMap& pulled) {
  const absl::Time start = clock_.Now();
  if (!proceed.evaluate() || (last_eval_ && start - *last_eval_ < options_.eval_interval)) {
    return std::nullopt;
  }
  if (!eval_model_.WriteParameters(pulled).ok()) return std::nullopt;
  last_eval_ = start;
  const size_t n = std::min<size_t>(test_.size(), static_cast<size_t>(options_.eval_samples));
  const double accuracy =
      compute::Accuracy(eval_model_, test_.images.data(), test_.labels.data(), n, test_.features);
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::eval, took);
  metrics_.eval_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.test_accuracy.Set(accuracy);
  trace_.Record("eval", {{"clock", proceed.clock()}, {"accuracy", accuracy}});
  return accuracy;
}

absl::StatusOr<std::optional<double>> Worker::Exchange(const v1::Proceed& proceed) {
  if (peers_ == nullptr) {
    return absl::FailedPreconditionError("a peer-to-peer mode needs the trainer's Peer service");
  }
  const absl::Time start = clock_.Now();
  const v1::PeerExchange& exchange = proceed.exchange();
  const v1::Welcome& w = session_.welcome();
  const absl::Time deadline =
      absl::Now() +
      absl::Seconds(w.exchange_timeout_seconds() > 0 ? w.exchange_timeout_seconds() : 10.0);
  tensor::TensorMap own;
  model_.Read(&own);
  ASSIGN_OR_RETURN(const ExchangeOutcome outcome,
                   w.exchange_in_background() ? ExchangeInBackground(exchange, own, deadline)
                                              : ExchangeInRound(exchange, own, deadline));
  // The averaged model replaces the local one: the base moves to the local model first, so the
  // rebase keeps nothing of it (nothing is pending in these modes).
  model_.TakeDelta(std::nullopt);
  RETURN_IF_ERROR(model_.Rebase(own, -1));

  const TransferTotals sent = peers_->sent.Take();
  const TransferTotals got = peers_->received.Take();
  transfers_.set_sent_bytes(sent.bytes);
  transfers_.set_send_seconds(sent.seconds);
  transfers_.set_models_sent(sent.transfers);
  transfers_.set_received_bytes(got.bytes);
  transfers_.set_receive_seconds(got.seconds);
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::pull, took);
  metrics_.pull_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.exchange_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.exchange_bytes_sent.Increment(sent.bytes);
  metrics_.exchange_bytes_received.Increment(got.bytes);
  metrics_.exchange_peers_missed.Increment(outcome.missed);
  metrics_.exchange_transfers_preempted.Increment(outcome.preempted);
  trace_.Record("exchange", {{"round", exchange.round()},
                             {"sent_to", exchange.send_to_size()},
                             {"received", outcome.received},
                             {"expected", exchange.receive_from_size()},
                             {"preempted", outcome.preempted},
                             {"seconds", absl::ToDoubleSeconds(took)}});
  return MaybeEvaluate(proceed, own);
}

absl::StatusOr<Worker::ExchangeOutcome> Worker::ExchangeInRound(const v1::PeerExchange& exchange,
                                                                tensor::TensorMap& own,
                                                                absl::Time deadline) {
  const std::vector<v1::PeerRef> receivers(exchange.send_to().begin(), exchange.send_to().end());
  std::vector<uint64_t> senders;
  for (const v1::PeerRef& peer : exchange.receive_from()) senders.push_back(peer.trainer_id());
  std::vector<absl::Status> sent;
  std::thread send([&] {
    sent = peers_->sender.SendToAll(receivers, session_.welcome().trainer_id(), exchange.round(),
                                    own, deadline);
  });
  const std::map<uint64_t, tensor::TensorMap> received =
      peers_->inbox.Collect(exchange.round(), senders, deadline);
  send.join();
  ExchangeOutcome outcome;
  outcome.received = static_cast<int>(received.size());
  outcome.missed = static_cast<int>(senders.size() - received.size());
  for (const absl::Status& s : sent) {
    if (s.ok()) continue;
    ++outcome.missed;
    spdlog::warn("round {}: {}", exchange.round(), s.ToString());
  }
  if (received.size() < senders.size()) {
    spdlog::warn("round {}: {} of {} peers delivered by the deadline", exchange.round(),
                 received.size(), senders.size());
  }
  RETURN_IF_ERROR(AverageInto(own, received));
  return outcome;
}

absl::StatusOr<Worker::ExchangeOutcome> Worker::ExchangeInBackground(
    const v1::PeerExchange& exchange, tensor::TensorMap& own, absl::Time deadline) {
  // Average in what has arrived, then multicast the result while the next iteration computes.
  const std::map<uint64_t, tensor::TensorMap> received = peers_->inbox.TakeLatest();
  RETURN_IF_ERROR(AverageInto(own, received));
  peers_->multicast.Start({exchange.send_to().begin(), exchange.send_to().end()},
                          session_.welcome().trainer_id(), exchange.round(), own, deadline);
  const BackgroundMulticast::Outcomes ended = peers_->multicast.Take();
  return ExchangeOutcome{static_cast<int>(received.size()), ended.failed, ended.cancelled};
}

float Worker::ComputeStep() {
  const absl::Time asked = clock_.Now();
  absl::Time began;
  absl::Time ended;
  const float loss = model_.Step([&] {
    began = clock_.Now();
    const int n = sampler_.Next(train_, &batch_x_, &batch_y_);
    const float l = trained_.TrainStep(batch_x_.data(), batch_y_.data(), n, options_.learning_rate);
    ended = clock_.Now();
    return l;
  });
  // Compute is the step itself (sampling its batch included), stretched by the slowdown. Waiting
  // for the model while the communication thread rebases it (wbsp-overlap) is wait.
  const absl::Duration lock_wait = began - asked;
  absl::Duration took = ended - began;
  if (options_.slowdown > 1.0) {
    const absl::Duration emulated = took * (options_.slowdown - 1.0);
    absl::SleepFor(emulated);
    took += emulated;
  }
  AddTime(&WorkerTimings::compute, took);
  AddTime(&WorkerTimings::wait, lock_wait);
  metrics_.compute_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.wait_seconds.Increment(absl::ToDoubleSeconds(lock_wait));
  metrics_.step_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.steps.Increment();
  metrics_.loss.Set(loss);
  last_loss_ = loss;
  ++steps_;
  return loss;
}

absl::Status Worker::PushAndReport(int64_t new_clock, float loss, std::optional<double> accuracy) {
  const v1::Welcome& w = session_.welcome();
  v1::ClockReport report;
  if (w.peer_to_peer()) {
    *report.mutable_transfers() = transfers_;
    transfers_.Clear();
  } else {
    RETURN_IF_ERROR(Push(new_clock));
  }
  metrics_.clock.Set(static_cast<double>(new_clock));
  report.set_clock(new_clock);
  *report.mutable_timings() = Timings();
  report.set_loss(loss);
  if (accuracy) report.set_test_accuracy(*accuracy);
  return session_.ReportClock(report);
}

absl::Status Worker::Push(int64_t new_clock) {
  const absl::Time start = clock_.Now();
  const v1::Welcome& w = session_.welcome();
  const bool round_mode = w.push_mode() == v1::APPLY_MODE_ROUND;
  tensor::TensorMap delta =
      model_.TakeDelta(round_mode ? std::optional<int64_t>(new_clock) : std::nullopt);
  v1::PushHeader header;
  header.set_trainer_id(w.trainer_id());
  header.set_incarnation(w.incarnation());
  header.set_sequence(++sequence_);
  header.set_apply_mode(w.push_mode());
  // Each delta counts once: added whole (asp, ssp, dssp) or aggregated by its round.
  header.set_weight(1.0f);
  header.set_clock(new_clock);
  ASSIGN_OR_RETURN(uint64_t bytes, store_.Push(header, delta));
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::push, took);
  metrics_.push_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.push_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.push_bytes.Increment(static_cast<double>(bytes));
  trace_.Record("pushed", {{"clock", new_clock}});
  return absl::OkStatus();
}

bool Worker::StepLimitReached() const {
  return options_.max_steps > 0 && steps_.load() >= options_.max_steps;
}

absl::Status Worker::Run(const absl::Notification& stop) {
  const v1::Welcome& w = session_.welcome();
  {
    // Every trainer offers the same seeded initial model; the first one creates it.
    v1::PushHeader header;
    header.set_trainer_id(w.trainer_id());
    header.set_incarnation(w.incarnation());
    tensor::TensorMap initial;
    model_.Read(&initial);
    RETURN_IF_ERROR(store_.Initialize(header, initial));
  }
  session_.StartHeartbeats([this] { return Timings(); });
  RETURN_IF_ERROR(w.overlap_communication() ? RunOverlapped(stop) : RunSequential(stop));
  spdlog::info("leaving after {} steps", steps_.load());
  session_.Leave(done_                    ? "training is done"
                 : stop.HasBeenNotified() ? "shutdown"
                                          : "step limit reached");
  return absl::OkStatus();
}

absl::Status Worker::RunSequential(const absl::Notification& stop) {
  while (!StepLimitReached()) {
    ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed, AwaitProceed(stop));
    if (!proceed) break;
    trace_.Record("start", {{"clock", proceed->clock()}, {"bound", proceed->staleness_bound()}});
    ASSIGN_OR_RETURN(std::optional<double> accuracy,
                     proceed->has_exchange() ? Exchange(*proceed) : ApplyPull(*proceed));
    const float loss = ComputeStep();
    RETURN_IF_ERROR(PushAndReport(proceed->clock() + 1, loss, accuracy));
  }
  return absl::OkStatus();
}

absl::Status Worker::RunOverlapped(const absl::Notification& stop) {
  // The first grant names the model to start from.
  ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed, AwaitProceed(stop));
  if (!proceed) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::optional<double> accuracy, ApplyPull(*proceed));
  std::atomic<bool> halt{false};
  std::thread compute([&] {
    while (!halt.load() && !StepLimitReached()) ComputeStep();
  });
  absl::Status status = [&]() -> absl::Status {
    while (!stop.HasBeenNotified()) {
      // Push as soon as there is something to push; between pushes the compute thread runs on.
      if (model_.unpushed_steps() == 0) {
        if (StepLimitReached()) break;
        absl::SleepFor(absl::Milliseconds(1));
        continue;
      }
      RETURN_IF_ERROR(PushAndReport(proceed->clock() + 1, last_loss_.load(), accuracy));
      ASSIGN_OR_RETURN(proceed, AwaitProceed(stop));
      if (!proceed) break;
      ASSIGN_OR_RETURN(accuracy, ApplyPull(*proceed));
    }
    return absl::OkStatus();
  }();
  halt = true;
  compute.join();
  return status;
}

}  // namespace syncopate::trainer
