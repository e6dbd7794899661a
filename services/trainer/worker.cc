#include "trainer/worker.h"

#include <algorithm>

#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace syncopate::trainer {

Worker::Worker(WorkerOptions options, SessionClient& session, StoreClient& store,
               compute::Model& model, const data::Dataset& train, const data::Dataset& test,
               TrainerMetrics& metrics, TraceWriter& trace, const base::Clock& clock)
    : options_(options),
      session_(session),
      store_(store),
      model_(model),
      train_(train),
      test_(test),
      metrics_(metrics),
      trace_(trace),
      clock_(clock),
      joined_at_(clock.Now()),
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
    if (proceed.status().code() != absl::StatusCode::kDeadlineExceeded) return proceed.status();
    if (clock_.Now() - start > options_.directive_timeout) {
      return absl::DeadlineExceededError("no directive from the coordinator within " +
                                         absl::FormatDuration(options_.directive_timeout));
    }
  }
  return std::optional<v1::Proceed>();
}

absl::StatusOr<tensor::TensorMap> Worker::PullModel(const v1::Proceed& proceed) {
  const absl::Time start = clock_.Now();
  const int64_t round = proceed.pull().has_round() ? proceed.pull().round() : -1;
  ASSIGN_OR_RETURN(PulledModel pulled, store_.Pull(round));
  RETURN_IF_ERROR(model_.WriteParameters(pulled.tensors));
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::pull, took);
  metrics_.pull_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.pull_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.pull_bytes.Increment(static_cast<double>(pulled.bytes));
  if (round >= 0) trace_.Record("pull", {{"round", round}, {"checksums", pulled.checksums}});
  return std::move(pulled.tensors);
}

std::optional<double> Worker::MaybeEvaluate(const v1::Proceed& proceed) {
  const absl::Time start = clock_.Now();
  if (!proceed.evaluate() || (last_eval_ && start - *last_eval_ < options_.eval_interval)) {
    return std::nullopt;
  }
  last_eval_ = start;
  const size_t n = std::min<size_t>(test_.size(), static_cast<size_t>(options_.eval_samples));
  const double accuracy =
      compute::Accuracy(model_, test_.images.data(), test_.labels.data(), n, test_.features);
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::eval, took);
  metrics_.eval_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.test_accuracy.Set(accuracy);
  trace_.Record("eval", {{"clock", proceed.clock()}, {"accuracy", accuracy}});
  return accuracy;
}

float Worker::ComputeStep() {
  const absl::Time start = clock_.Now();
  const int n = sampler_.Next(train_, &batch_x_, &batch_y_);
  const float loss = model_.TrainStep(batch_x_.data(), batch_y_.data(), n, options_.learning_rate);
  if (options_.slowdown > 1.0) {
    absl::SleepFor((clock_.Now() - start) * (options_.slowdown - 1.0));
  }
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::compute, took);
  metrics_.compute_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.step_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.steps.Increment();
  metrics_.loss.Set(loss);
  return loss;
}

absl::Status Worker::PushDelta(const tensor::TensorMap& base, int64_t new_clock) {
  const absl::Time start = clock_.Now();
  tensor::TensorMap delta;
  model_.ReadParameters(&delta);
  for (auto& [name, values] : delta) {
    const std::vector<float>& b = base.at(name);
    for (size_t i = 0; i < values.size(); ++i) values[i] -= b[i];
  }
  const v1::Welcome& w = session_.welcome();
  v1::PushHeader header;
  header.set_trainer_id(w.trainer_id());
  header.set_incarnation(w.incarnation());
  header.set_sequence(++sequence_);
  header.set_apply_mode(w.push_mode());
  // Each delta is one SGD step: applied whole (asp, ssp) or averaged over the round (bsp).
  header.set_weight(1.0f);
  header.set_round(new_clock);
  ASSIGN_OR_RETURN(uint64_t bytes, store_.Push(header, delta));
  const absl::Duration took = clock_.Now() - start;
  AddTime(&WorkerTimings::push, took);
  metrics_.push_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.push_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.push_bytes.Increment(static_cast<double>(bytes));
  return absl::OkStatus();
}

absl::Status Worker::Run(const absl::Notification& stop) {
  const v1::Welcome& w = session_.welcome();
  {
    // Every trainer offers the same seeded initial model; the first one creates it.
    v1::PushHeader header;
    header.set_trainer_id(w.trainer_id());
    header.set_incarnation(w.incarnation());
    tensor::TensorMap initial;
    model_.ReadParameters(&initial);
    RETURN_IF_ERROR(store_.Initialize(header, initial));
  }
  session_.StartHeartbeats([this] { return Timings(); });
  int64_t steps = 0;
  while (options_.max_steps == 0 || steps < options_.max_steps) {
    ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed, AwaitProceed(stop));
    if (!proceed) break;
    const int64_t clock = proceed->clock();
    trace_.Record("start", {{"clock", clock}, {"bound", proceed->staleness_bound()}});
    ASSIGN_OR_RETURN(tensor::TensorMap base, PullModel(*proceed));
    std::optional<double> accuracy = MaybeEvaluate(*proceed);
    const float loss = ComputeStep();
    RETURN_IF_ERROR(PushDelta(base, clock + 1));
    ++steps;
    trace_.Record("pushed", {{"clock", clock + 1}});
    metrics_.clock.Set(static_cast<double>(clock + 1));
    v1::ClockReport report;
    report.set_clock(clock + 1);
    *report.mutable_timings() = Timings();
    report.set_loss(loss);
    if (accuracy) report.set_test_accuracy(*accuracy);
    RETURN_IF_ERROR(session_.ReportClock(report));
  }
  spdlog::info("leaving after {} steps", steps);
  session_.Leave(stop.HasBeenNotified() ? "shutdown" : "step limit reached");
  return absl::OkStatus();
}

}  // namespace syncopate::trainer
