#include "client/protocol.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace syncopate::client {

Protocol::Protocol(const SessionOptions& options, CoordinatorLink& coordinator, StoreLink& store,
                   TrainerMetrics& metrics, TraceWriter& trace, const base::Clock& clock,
                   PeerLink* peers)
    : options_(options),
      coordinator_(coordinator),
      store_(store),
      metrics_(metrics),
      trace_(trace),
      clock_(clock),
      peers_(peers),
      joined_at_(clock.Now()) {
  if (options_.evaluate && options_.evaluate_in_background) {
    evaluator_ = std::make_unique<BackgroundEvaluator>(
        options_.evaluate,
        [this](double accuracy, absl::Time taken_at, absl::Duration took) {
          AddTime(&SessionTimings::eval, took);
          metrics_.eval_seconds.Increment(absl::ToDoubleSeconds(took));
          ReportAccuracy(accuracy, taken_at);
        },
        [this] { return clock_.Now(); });
  }
}

v1::PushHeader Protocol::Identity() const {
  v1::PushHeader header;
  header.set_trainer_id(welcome().trainer_id());
  header.set_incarnation(welcome().incarnation());
  return header;
}

absl::Status Protocol::Begin(const tensor::TensorMap& initial) {
  RETURN_IF_ERROR(store_.Initialize(Identity(), initial));
  // A trainer joining a peer-to-peer job under way holds an untrained model (its own, or the
  // store's initial one, which these modes never update): it holds no mass, so that its exchanges
  // take its peers' trained models instead of averaging the untrained one in (MixInto).
  if (welcome().peer_to_peer()) {
    if (peers_ != nullptr) {
      peers_->SetIncarnation(welcome().incarnation());
      peers_->SetCodec(welcome().codec());
    }
    if (welcome().start_clock() > 0) {
      mass_ = 0;
      await_peers_model_ = true;
    }
    metrics_.mixing_mass.Set(mass_);
  }
  coordinator_.StartHeartbeats([this] { return Timings(); });
  return absl::OkStatus();
}

void Protocol::AddTime(double SessionTimings::*field, absl::Duration d) {
  absl::MutexLock lock(&mu_);
  timings_.*field += absl::ToDoubleSeconds(d);
}

void Protocol::AddCompute(absl::Duration real, absl::Duration emulated) {
  const absl::Duration d = real + emulated;
  AddTime(&SessionTimings::compute, d);
  AddTime(&SessionTimings::emulated_compute, emulated);
  metrics_.compute_seconds.Increment(absl::ToDoubleSeconds(d));
  metrics_.emulated_compute_seconds.Increment(absl::ToDoubleSeconds(emulated));
  metrics_.step_duration.Observe(absl::ToDoubleSeconds(d));
  metrics_.steps.Increment();
  last_compute_us_ = absl::ToInt64Microseconds(d);
}

void Protocol::AddWait(absl::Duration d) {
  AddTime(&SessionTimings::wait, d);
  metrics_.wait_seconds.Increment(absl::ToDoubleSeconds(d));
}

void Protocol::AddPull(absl::Duration d) {
  AddTime(&SessionTimings::pull, d);
  metrics_.pull_seconds.Increment(absl::ToDoubleSeconds(d));
}

v1::TrainerTimings Protocol::Timings() const {
  const double wall = absl::ToDoubleSeconds(clock_.Now() - joined_at_);
  absl::MutexLock lock(&mu_);
  v1::TrainerTimings t;
  t.set_compute_seconds(timings_.compute);
  t.set_emulated_compute_seconds(timings_.emulated_compute);
  t.set_wait_seconds(timings_.wait);
  t.set_communication_seconds(timings_.push + timings_.pull);
  t.set_wall_seconds(wall);
  metrics_.compute_time_ratio.Set(wall > 0 ? timings_.compute / wall : 0);
  return t;
}

absl::StatusOr<std::optional<v1::Proceed>> Protocol::AwaitProceed(
    const std::function<bool()>& stopping) {
  const absl::Time start = clock_.Now();
  // The timeout runs from the coordinator's last directive of any kind (a HeartbeatAck while the
  // mode holds this grant), not from the start of the wait: a straggler may hold it for longer.
  absl::Time heard_at = start;
  uint64_t heard = coordinator_.directives_heard();
  while (!stopping()) {
    absl::StatusOr<v1::Proceed> proceed = coordinator_.WaitProceed(absl::Milliseconds(200));
    if (proceed.ok()) {
      const absl::Duration waited = clock_.Now() - start;
      AddWait(waited);
      metrics_.wait_duration.Observe(absl::ToDoubleSeconds(waited));
      trace_.Record("start", {{"clock", proceed->clock()},
                              {"bound", proceed->staleness_bound()},
                              {"wait_us", absl::ToInt64Microseconds(waited)}});
      push_weight_ = proceed->push_weight();
      if (proceed->world_size() > 0) {
        world_.store(World{static_cast<int>(proceed->world_rank()),
                           static_cast<int>(proceed->world_size())});
      }
      return std::optional<v1::Proceed>(*std::move(proceed));
    }
    if (absl::IsOutOfRange(proceed.status())) {
      spdlog::info("{}", std::string(proceed.status().message()));
      done_ = true;
      return std::optional<v1::Proceed>();
    }
    if (proceed.status().code() != absl::StatusCode::kDeadlineExceeded) return proceed.status();
    if (const uint64_t now_heard = coordinator_.directives_heard(); now_heard != heard) {
      heard = now_heard;
      heard_at = clock_.Now();
    }
    if (clock_.Now() - heard_at > options_.directive_timeout) {
      return absl::DeadlineExceededError("no directive from the coordinator within " +
                                         absl::FormatDuration(options_.directive_timeout));
    }
  }
  return std::optional<v1::Proceed>();
}

absl::StatusOr<std::optional<PulledModel>> Protocol::Pull(const v1::Proceed& proceed) {
  if (proceed.pull().has_none()) return std::optional<PulledModel>();
  const absl::Time start = clock_.Now();
  const int64_t round = proceed.pull().has_round() ? proceed.pull().round() : -1;
  ASSIGN_OR_RETURN(PulledModel pulled, store_.Pull(round));
  const absl::Duration took = clock_.Now() - start;
  AddPull(took);
  metrics_.pull_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.pull_bytes.Increment(static_cast<double>(pulled.bytes));
  // The round served: a newer one than asked when the store no longer kept `round`.
  if (round >= 0) {
    trace_.Record("pull", {{"round", pulled.round},
                           {"checksums", pulled.checksums},
                           {"pull_us", absl::ToInt64Microseconds(took)}});
  }
  MaybeEvaluate(proceed, pulled.tensors);
  return std::optional<PulledModel>(std::move(pulled));
}

void Protocol::MaybeEvaluate(const v1::Proceed& proceed, const tensor::TensorMap& model) {
  const absl::Time start = clock_.Now();
  {
    absl::MutexLock lock(&mu_);
    if (!proceed.evaluate() || (last_eval_ && start - *last_eval_ < options_.eval_interval)) return;
    last_eval_ = start;
    if (!options_.evaluate) {
      evaluation_due_ = true;
      return;
    }
  }
  if (evaluator_) {
    evaluator_->Submit(model, start);
    return;
  }
  EvaluateNow(model);
}

double Protocol::EvaluateNow(const tensor::TensorMap& model) {
  const absl::Time start = clock_.Now();
  const double accuracy = options_.evaluate(model);
  AddTime(&SessionTimings::eval, clock_.Now() - start);
  metrics_.eval_seconds.Increment(absl::ToDoubleSeconds(clock_.Now() - start));
  ReportAccuracy(accuracy, start);
  return accuracy;
}

void Protocol::LeaveAfterFinalAverage(const v1::Proceed& proceed,
                                      const tensor::TensorMap& average) {
  std::optional<double> accuracy;
  if (proceed.evaluate() && options_.evaluate) {
    if (evaluator_) evaluator_->Stop();  // a periodic evaluation in progress finishes first
    accuracy = EvaluateNow(average);
  }
  trace_.Record("final_average",
                {{"round", proceed.exchange().round()}, {"accuracy", accuracy.value_or(-1)}});
  done_ = true;
  if (proceed.evaluate() && !options_.evaluate) {
    absl::MutexLock lock(&mu_);
    final_accuracy_due_ = true;
    return;
  }
  coordinator_.Leave(FinalLeave(accuracy), /*finished=*/true);
}

void Protocol::PushResidual(tensor::SharedTensorMap residual) {
  if (welcome().peer_to_peer() || welcome().push_mode() != v1::APPLY_MODE_IMMEDIATE) return;
  trace_.Record("residual", {{"clock", last_pushed_clock_}});
  if (absl::Status pushed = Push(std::move(residual), last_pushed_clock_); !pushed.ok()) {
    spdlog::warn("leaving without pushing what compression held back of this trainer's steps: {}",
                 pushed.ToString());
  }
}

void Protocol::ResendWhatRestartsLost() {
  if (welcome().peer_to_peer()) return;
  if (absl::Status resent = store_.ResendWhatRestartsLost(Identity()); !resent.ok()) {
    spdlog::warn(
        "leaving without re-sending what a store restart lost of this trainer's pushes: {}",
        resent.ToString());
  }
}

void Protocol::Leave(const std::string& reason, std::optional<double> final_accuracy) {
  v1::Leave leave;
  leave.set_reason(reason);
  bool final;
  {
    absl::MutexLock lock(&mu_);
    final = std::exchange(final_accuracy_due_, false);
    // An evaluation that ended after the last report goes with the Leave.
    if (!final) MovePendingAccuracy(&leave);
  }
  if (final) {
    coordinator_.Leave(FinalLeave(final_accuracy), /*finished=*/true);
  } else {
    coordinator_.Leave(leave, /*finished=*/false);
  }
}

v1::Leave Protocol::FinalLeave(std::optional<double> accuracy) {
  v1::Leave leave;
  leave.set_reason(kFinalAverageDone);
  if (accuracy) leave.set_final_test_accuracy(*accuracy);
  return leave;
}

template <typename Message>
void Protocol::MovePendingAccuracy(Message* message) {
  if (!accuracy_) return;
  message->set_test_accuracy(*accuracy_);
  message->set_test_accuracy_age_seconds(
      std::max(0.0, absl::ToDoubleSeconds(clock_.Now() - accuracy_taken_at_)));
  accuracy_.reset();
}

bool Protocol::evaluation_due() const {
  absl::MutexLock lock(&mu_);
  return evaluation_due_;
}

bool Protocol::final_accuracy_due() const {
  absl::MutexLock lock(&mu_);
  return final_accuracy_due_;
}

void Protocol::ReportAccuracy(double accuracy, std::optional<absl::Time> taken_at) {
  {
    absl::MutexLock lock(&mu_);
    evaluation_due_ = false;
    accuracy_ = accuracy;
    accuracy_taken_at_ = taken_at.value_or(clock_.Now());
  }
  metrics_.test_accuracy.Set(accuracy);
  trace_.Record("eval", {{"accuracy", accuracy}});
}

absl::Status Protocol::Push(tensor::SharedTensorMap delta, int64_t clock) {
  const absl::Time start = clock_.Now();
  const v1::Welcome& w = welcome();
  v1::PushHeader header = Identity();
  header.set_sequence(++sequence_);
  header.set_apply_mode(w.push_mode());
  // Immediate pushes weigh what the last grant said (the job's step-size rule); round pushes
  // count once, and their round applies the rule.
  header.set_weight(push_weight_ > 0 ? static_cast<float>(push_weight_) : 1.0f);
  header.set_clock(clock);
  last_pushed_clock_ = clock;
  header.set_codec(w.codec());  // the delta is compressed already (LocalModel::Compress)
  uint64_t raw_bytes = 0;
  for (const auto& [name, values] : *delta) raw_bytes += values.size() * sizeof(float);
  absl::StatusOr<uint64_t> pushed = store_.Push(header, std::move(delta));
  if (!pushed.ok()) {
    // Given up as the trainer stops: the shards that had taken it keep it (the push audit allows
    // for it), the others never get it.
    if (IsGivenUpForStop(pushed.status())) trace_.Record("push_given_up", {{"clock", clock}});
    return pushed.status();
  }
  const uint64_t bytes = *pushed;
  metrics_.push_raw_bytes.Increment(static_cast<double>(raw_bytes));
  const absl::Duration took = clock_.Now() - start;
  AddTime(&SessionTimings::push, took);
  metrics_.push_seconds.Increment(absl::ToDoubleSeconds(took));
  metrics_.push_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.push_bytes.Increment(static_cast<double>(bytes));
  trace_.Record("pushed", {{"clock", clock},
                           {"compute_us", last_compute_us_.load()},
                           {"push_us", absl::ToInt64Microseconds(took)},
                           {"bytes", bytes},
                           {"raw_bytes", raw_bytes}});
  return absl::OkStatus();
}

absl::Status Protocol::Report(int64_t clock, float loss) {
  v1::ClockReport report;
  if (welcome().peer_to_peer()) {
    *report.mutable_transfers() = transfers_;
    transfers_.Clear();
  }
  metrics_.clock.Set(static_cast<double>(clock));
  metrics_.loss.Set(loss);
  report.set_clock(clock);
  *report.mutable_timings() = Timings();
  report.set_loss(loss);
  {
    absl::MutexLock lock(&mu_);
    MovePendingAccuracy(&report);
  }
  return coordinator_.ReportClock(report);
}

absl::Status Protocol::Exchange(const v1::Proceed& proceed, tensor::TensorMap& own) {
  if (peers_ == nullptr) {
    return absl::FailedPreconditionError("a peer-to-peer mode needs the trainer's Peer service");
  }
  const absl::Time start = clock_.Now();
  const v1::PeerExchange& exchange = proceed.exchange();
  const v1::Welcome& w = welcome();
  const absl::Time deadline = ExchangeDeadline();
  ASSIGN_OR_RETURN(const ExchangeOutcome outcome, w.exchange_in_background()
                                                      ? ExchangeInBackground(exchange, own)
                                                      : ExchangeInRound(exchange, own, deadline));
  const TransferTotals sent = peers_->TakeSent();
  const TransferTotals got = peers_->TakeReceived();
  transfers_.set_sent_bytes(sent.bytes);
  transfers_.set_send_seconds(sent.seconds);
  transfers_.set_models_sent(sent.transfers);
  transfers_.set_received_bytes(got.bytes);
  transfers_.set_receive_seconds(got.seconds);
  auto copy = [](const std::vector<StreamTimes>& streams,
                 google::protobuf::RepeatedPtrField<v1::StreamTransfer>* out) {
    out->Clear();
    for (const StreamTimes& s : streams) {
      v1::StreamTransfer* t = out->Add();
      t->set_peer(s.peer);
      t->set_bytes(s.bytes);
      t->set_start_seconds(s.start_seconds);
      t->set_seconds(s.seconds);
    }
  };
  copy(sent.streams, transfers_.mutable_sent_streams());
  copy(got.streams, transfers_.mutable_received_streams());
  const absl::Duration took = clock_.Now() - start;
  AddPull(took);
  metrics_.exchange_duration.Observe(absl::ToDoubleSeconds(took));
  metrics_.exchange_bytes_sent.Increment(sent.bytes);
  metrics_.exchange_bytes_received.Increment(got.bytes);
  metrics_.exchange_peers_missed.Increment(outcome.missed);
  metrics_.exchange_transfers_preempted.Increment(outcome.preempted);
  metrics_.mixing_mass.Set(mass_);
  trace_.Record("exchange", {{"round", exchange.round()},
                             {"sent_to", exchange.send_to_size()},
                             {"received", outcome.received},
                             {"expected", exchange.receive_from_size()},
                             {"preempted", outcome.preempted},
                             {"mass", mass_},
                             {"seconds", absl::ToDoubleSeconds(took)}});
  // The final average is evaluated once, as the trainer leaves (LeaveAfterFinalAverage).
  if (!proceed.final_average()) MaybeEvaluate(proceed, own);
  return absl::OkStatus();
}

double Protocol::OwnMass(double kept, const std::map<uint64_t, PeerModel>& received) {
  // Models arrived, and neither they nor this trainer hold mass: every trainer in reach joined the
  // job under way, or the trainers that held the mass left. The mixing starts afresh, each with
  // mass 1, as at a job's start.
  if (kept > 0) {
    massless_exchanges_ = 0;
    return kept;
  }
  if (received.empty()) return kept;  // nothing learnt
  for (const auto& [sender, peer] : received) {
    if (peer.mass > 0) {
      massless_exchanges_ = 0;
      return kept;
    }
  }
  if (++massless_exchanges_ < kMasslessExchangesBeforeRestart) return kept;
  massless_exchanges_ = 0;
  return 1;
}

absl::StatusOr<Protocol::ExchangeOutcome> Protocol::ExchangeInRound(
    const v1::PeerExchange& exchange, tensor::TensorMap& own, absl::Time deadline) {
  peers_->PlanRound(exchange);
  const std::vector<v1::PeerRef> receivers(exchange.send_to().begin(), exchange.send_to().end());
  std::vector<uint64_t> senders;
  for (const v1::PeerRef& peer : exchange.receive_from()) senders.push_back(peer.trainer_id());
  // Push-sum: one share of this trainer's mass stays, one goes with each model sent.
  const double share = PushSumShare(mass_, receivers.size());
  std::vector<absl::Status> sent;
  // The transfers hold the model until gRPC has sent it (PeerSender): it comes back for the
  // average below, copied only if gRPC still holds some of it.
  auto sending = std::make_shared<tensor::TensorMap>(std::move(own));
  std::thread send([&] {
    sent = peers_->SendToAll(receivers, welcome().trainer_id(), exchange.round(), sending, share,
                             deadline);
  });
  const std::map<uint64_t, PeerModel> received =
      peers_->Collect(exchange.round(), senders, deadline);
  send.join();
  if (sending.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);  // gRPC's reads are done (as Writable)
    own = std::move(*sending);
  } else {
    own = *sending;
  }
  ExchangeOutcome outcome;
  outcome.received = static_cast<int>(received.size());
  outcome.missed = static_cast<int>(senders.size() - received.size());
  // Every share left, also those whose transfer failed: the next model to that receiver carries
  // them (PeerSender's running sums).
  const double kept = mass_ - share * static_cast<double>(receivers.size());
  for (const absl::Status& s : sent) {
    if (s.ok()) continue;
    ++outcome.missed;
    spdlog::warn("round {}: {}", exchange.round(), s.ToString());
  }
  if (received.size() < senders.size()) {
    spdlog::warn("round {}: {} of {} peers delivered by the deadline", exchange.round(),
                 received.size(), senders.size());
  }
  ASSIGN_OR_RETURN(mass_, MixInto(own, OwnMass(kept, received), received));
  return outcome;
}

absl::StatusOr<Protocol::ExchangeOutcome> Protocol::ExchangeInBackground(
    const v1::PeerExchange& exchange, tensor::TensorMap& own) {
  // Average in what has arrived; the multicast follows the next step (StartPlannedMulticast),
  // while the iteration after it computes.
  peers_->NamePeers(exchange);
  std::map<uint64_t, PeerModel> received = peers_->TakeLatest(absl::InfinitePast());
  if (std::exchange(await_peers_model_, false)) {
    // A joiner: until a model with mass arrives (a fellow joiner's holds none), or the deadline.
    const absl::Time deadline = ExchangeDeadline();
    auto holds_mass = [&] {
      return std::any_of(received.begin(), received.end(),
                         [](const auto& r) { return r.second.mass > 0; });
    };
    while (!holds_mass() && clock_.Now() < deadline) {
      for (auto& [sender, newer] : peers_->TakeLatest(deadline)) {
        AddNewer(received, sender, std::move(newer));
      }
    }
  }
  ASSIGN_OR_RETURN(const double mass, MixInto(own, OwnMass(mass_, received), received));
  const MulticastOutcomes ended = peers_->TakeMulticastOutcomes();
  mass_ = mass;
  planned_multicast_ = exchange;
  return ExchangeOutcome{static_cast<int>(received.size()), ended.failed, ended.cancelled};
}

void Protocol::StartPlannedMulticast(tensor::TensorMap own) {
  if (!planned_multicast_ || peers_ == nullptr) return;
  const v1::PeerExchange exchange = std::move(*planned_multicast_);
  planned_multicast_.reset();
  const double share = PushSumShare(mass_, exchange.send_to_size());
  const double kept = peers_->StartMulticast({exchange.send_to().begin(), exchange.send_to().end()},
                                             welcome().trainer_id(), exchange.round(),
                                             std::move(own), share, ExchangeDeadline());
  mass_ -= share * exchange.send_to_size() - kept;
  metrics_.mixing_mass.Set(mass_);
  // The mass the exchange recorded went partly with these models: what stays is recorded too, so
  // that a trace's last mass is what the trainer holds.
  trace_.Record(
      "multicast",
      {{"round", exchange.round()}, {"sent_to", exchange.send_to_size()}, {"mass", mass_}});
}

absl::Time Protocol::ExchangeDeadline() const {
  const double seconds = welcome().exchange_timeout_seconds();
  return clock_.Now() + absl::Seconds(seconds > 0 ? seconds : 10.0);
}

}  // namespace syncopate::client
