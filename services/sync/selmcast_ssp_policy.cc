#include "sync/selmcast_ssp_policy.h"

#include <algorithm>
#include <iterator>

namespace syncopate::sync {
namespace {

// Weight of a new iteration time in its smoothed value.
constexpr double kIterationWeight = 0.5;

}  // namespace

SelMcastSspPolicy::SelMcastSspPolicy(SelMcastSspConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout),
      config_(std::move(config)),
      rng_(config_.seed) {}

std::vector<TrainerId> SelMcastSspPolicy::ReceiversOf(TrainerId sender) const {
  std::vector<TrainerId> receivers;
  auto it = in_flight_.find(sender);
  if (it == in_flight_.end()) return receivers;
  for (const auto& [receiver, transfer] : it->second) receivers.push_back(receiver);
  return receivers;
}

absl::StatusOr<int64_t> SelMcastSspPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                                  Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  const int64_t start = clocks_.Min().value_or(floor_clock_);
  clocks_.Set(trainer, start);
  (start > 0 ? unfed_ : newcomers_).insert(trainer);
  waiting_.insert(trainer);
  decisions->Append(Evaluate(now));
  return start;
}

absl::StatusOr<Decisions> SelMcastSspPolicy::OnClock(TrainerId trainer, int64_t clock,
                                                     absl::Time now) {
  if (absl::Status s = CheckReport(trainer, clock, waiting_.count(trainer) > 0); !s.ok()) return s;
  clocks_.Set(trainer, clock);
  if (auto granted = granted_at_.find(trainer); granted != granted_at_.end()) {
    const double seconds = absl::ToDoubleSeconds(now - granted->second);
    auto [it, first] = iteration_seconds_.emplace(trainer, seconds);
    if (!first) it->second += kIterationWeight * (seconds - it->second);
  }
  waiting_.insert(trainer);
  return Evaluate(now);
}

Decisions SelMcastSspPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  if (!clocks_.Get(trainer)) return {};
  clocks_.Erase(trainer);
  waiting_.erase(trainer);
  newcomers_.erase(trainer);
  unfed_.erase(trainer);
  granted_at_.erase(trainer);
  iteration_seconds_.erase(trainer);
  in_flight_.erase(trainer);
  newest_round_.erase(trainer);
  for (auto& [sender, transfers] : in_flight_) transfers.erase(trainer);
  EraseEmptyRows();
  bandwidth_.Forget(trainer);
  return Evaluate(now);
}

Decisions SelMcastSspPolicy::OnTick(absl::Time now) { return Evaluate(now); }

void SelMcastSspPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  if (r.awaiting_grant) waiting_.insert(r.trainer);
  decisions->Append(Evaluate(now));
}

void SelMcastSspPolicy::ObserveTransfers(TrainerId trainer, const TransferSample& sample) {
  bandwidth_.Observe(trainer, sample);
  if (sample.sent_bytes > 0 && sample.models_sent > 0) {
    model_bytes_ = sample.sent_bytes / sample.models_sent;
  }
}

Decisions SelMcastSspPolicy::Evaluate(absl::Time now) {
  Decisions decisions;
  if (!gate_.Open(clocks_.size(), now)) return decisions;
  const std::optional<int64_t> min = clocks_.Min();
  if (!min) return decisions;
  floor_clock_ = *min;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const TrainerId trainer = *it;
    const int64_t clock = *clocks_.Get(trainer);
    if (clock - *min > config_.staleness) {
      ++it;
      continue;
    }
    it = waiting_.erase(it);
    granted_at_[trainer] = now;
    if (newcomers_.erase(trainer) > 0) {
      decisions.grants.push_back(Grant{trainer, clock, PullSpec::Live(), config_.staleness});
      continue;
    }
    PeerExchange exchange = PlanMulticast(trainer, clock, now, &decisions);
    decisions.grants.push_back(
        Grant{trainer, clock, PullSpec::None(), config_.staleness, -1, std::move(exchange)});
  }
  return decisions;
}

double SelMcastSspPolicy::Tau(TrainerId trainer, absl::Time now) const {
  auto rest_of_iteration = [&](TrainerId t) {
    auto granted = granted_at_.find(t);
    auto iteration = iteration_seconds_.find(t);
    if (granted == granted_at_.end() || iteration == iteration_seconds_.end()) return 0.0;
    return std::max(0.0, iteration->second - absl::ToDoubleSeconds(now - granted->second));
  };
  if (waiting_.count(trainer) == 0) return rest_of_iteration(trainer);
  // Held back by the bound: until the slowest trainers report.
  double tau = 0;
  const int64_t min = clocks_.Min().value_or(0);
  for (TrainerId t : clocks_.Members()) {
    if (*clocks_.Get(t) == min && waiting_.count(t) == 0) tau = std::max(tau, rest_of_iteration(t));
  }
  return tau;
}

double SelMcastSspPolicy::Remaining(const Transfer& transfer, absl::Time now) const {
  const double elapsed = absl::ToDoubleSeconds(now - transfer.start);
  return std::max(0.0, ModelBytes() - transfer.rate * elapsed);
}

void SelMcastSspPolicy::RetireDelivered(absl::Time now) {
  for (auto& [sender, transfers] : in_flight_) {
    for (auto it = transfers.begin(); it != transfers.end();) {
      it = Remaining(it->second, now) > 0 ? std::next(it) : transfers.erase(it);
    }
  }
  EraseEmptyRows();
}

void SelMcastSspPolicy::EraseEmptyRows() {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    it = it->second.empty() ? in_flight_.erase(it) : std::next(it);
  }
}

PeerExchange SelMcastSspPolicy::PlanMulticast(TrainerId kappa, int64_t round, absl::Time now,
                                              Decisions* decisions) {
  RetireDelivered(now);
  // Kappa's earlier transfers go on beside its new multicast, out of the planner's sight.
  Transfers earlier;
  if (auto it = in_flight_.find(kappa); it != in_flight_.end()) {
    earlier = std::move(it->second);
    in_flight_.erase(it);
  }
  PeerExchange exchange{round, {}, {}};
  std::vector<TrainerId> members;
  std::map<TrainerId, int> index;
  for (TrainerId t : clocks_.Members()) {
    index[t] = static_cast<int>(members.size());
    members.push_back(t);
  }
  const int n = static_cast<int>(members.size());
  if (n < 2) {
    if (!earlier.empty()) in_flight_[kappa] = std::move(earlier);
    return exchange;
  }

  OnlineMulticastProblem p;
  const double volume = ModelBytes();
  for (TrainerId t : members) {
    const LinkRates rates = bandwidth_.Estimate(t);
    p.links.upload.push_back(rates.upload);
    p.links.download.push_back(rates.download);
    p.links.volume.push_back(volume);
    p.links.min_receivers.push_back(DefaultMinReceivers(n, config_.min_receivers_fraction));
    p.tau.push_back(Tau(t, now));
  }
  p.links.layer = MulticastLayer::kL7;  // gRPC streams: one copy per receiver
  p.ready = index[kappa];
  p.eta = config_.eta;
  p.pareto_margin = config_.pareto_margin;
  p.in_flight = PairMatrix(n);
  p.pinned = PairMatrix(n);
  p.remaining.assign(static_cast<size_t>(n) * n, 0.0);
  PairHistory history(n, config_.k);
  auto last_exchange = [&](TrainerId i, TrainerId j, int64_t fallback) {
    auto it = last_exchanged_.find({i, j});
    return it == last_exchanged_.end() ? fallback : it->second;
  };
  // A trainer joined under way takes its first model from kappa, if kappa's is trained.
  const bool feeds = unfed_.count(kappa) == 0;
  for (int j = 0; j < n; ++j) {
    const bool unfed = feeds && unfed_.count(members[j]) > 0;
    // A pair never seen counts as just exchanged: a joiner is not forced on everyone at once.
    history.Set(p.ready, j,
                unfed ? round - config_.k - 1 : last_exchange(kappa, members[j], round - 1));
  }
  for (const auto& [sender, transfers] : in_flight_) {
    const int i = index.at(sender);
    for (const auto& [receiver, transfer] : transfers) {
      const int j = index.at(receiver);
      p.in_flight.set(i, j, true);
      p.pinned.set(i, j, transfer.pinned);
      p.remaining[static_cast<size_t>(i) * n + j] = Remaining(transfer, now);
    }
    const int64_t sender_round = newest_round_.at(sender);
    // Its rounds-since-exchange as of its newest round, shifted to kappa's round.
    for (int j = 0; j < n; ++j) {
      const int64_t since = sender_round - last_exchange(sender, members[j], sender_round - 1);
      history.Set(i, j, round - since);
    }
  }
  const OnlineMulticastPlan plan = config_.planner == "orpheus"
                                       ? SelectOrpheusOnline(p, history, round, rng_)
                                       : SelectSelMcastOnline(p, history, round);

  for (auto& [sender, transfers] : in_flight_) {
    const int i = index.at(sender);
    std::map<int64_t, Preemption> by_round;  // one StopSending per round of the sender's
    for (int j = 0; j < n; ++j) {
      if (!plan.preempted.at(i, j)) continue;
      const TrainerId receiver = members[j];
      auto it = transfers.find(receiver);
      if (it == transfers.end()) continue;
      const Transfer& transfer = it->second;
      Preemption& preemption = by_round[transfer.round];
      preemption.sender = sender;
      preemption.round = transfer.round;
      preemption.receivers.push_back(receiver);
      // It did not synchronize after all: the k-round rule counts from the exchange before.
      if (transfer.previous_exchange < 0) {
        last_exchanged_.erase({sender, receiver});
      } else {
        last_exchanged_[{sender, receiver}] = transfer.previous_exchange;
      }
      transfers.erase(it);
      ++preempted_transfers_;
    }
    for (auto& [r, preemption] : by_round) decisions->preemptions.push_back(std::move(preemption));
  }
  EraseEmptyRows();

  const int i = p.ready;
  // On a pair the new multicast takes again, the earlier transfer is kept when it is nearly
  // delivered (less than eta of the model left: the paper's rule for keeping a receiver) and the
  // new model does not go there; otherwise the new model supersedes it (the trainer's sender
  // cancels it). The earlier transfers to other receivers go on and share the upload.
  std::vector<int> takes;
  // A superseded transfer never synchronized: the k-round rule counts from the exchange before it.
  std::map<TrainerId, int64_t> superseded_previous;
  for (int j = 0; j < n; ++j) {
    if (!plan.sends.at(i, j)) continue;
    auto it = earlier.find(members[j]);
    if (it != earlier.end() && Remaining(it->second, now) < config_.eta * volume) continue;
    if (it != earlier.end()) {
      superseded_previous[members[j]] = it->second.previous_exchange;
      earlier.erase(it);
    }
    takes.push_back(j);
  }
  const int uploads = static_cast<int>(takes.size() + earlier.size());
  Transfers& transfers = in_flight_[kappa];
  transfers = std::move(earlier);
  newest_round_[kappa] = round;
  for (int j : takes) {
    const TrainerId receiver = members[j];
    Transfer& transfer = transfers[receiver];
    transfer.round = round;
    transfer.start = now;
    transfer.rate =
        std::min(p.links.upload[i] / uploads, p.links.download[j] / plan.sends.ColumnCount(j));
    transfer.pinned = history.Forced(i, j, round);
    auto superseded = superseded_previous.find(receiver);
    transfer.previous_exchange = superseded != superseded_previous.end()
                                     ? superseded->second
                                     : last_exchange(kappa, receiver, -1);
    last_exchanged_[{kappa, receiver}] = round;
    exchange.send_to.push_back(receiver);
    if (plan.additions.at(i, j) && !transfer.pinned) exchange.low_priority_to.insert(receiver);
    if (feeds) unfed_.erase(receiver);
  }
  if (transfers.empty()) in_flight_.erase(kappa);
  return exchange;
}

}  // namespace syncopate::sync
