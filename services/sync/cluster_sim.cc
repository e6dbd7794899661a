#include "sync/cluster_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/delta_staleness.h"
#include "sync/peer_staleness.h"

namespace syncopate::sync {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct SimTrainer {
  TrainerId id = 0;
  double slowdown = 1;
  LinkRates link;  // bytes/s
  bool live = true;
  absl::Time joined;
  absl::Time left = absl::InfiniteFuture();
  double compute_seconds = 0;
  Grant grant;               // the grant on its way or being worked on
  absl::Time served_from;    // its pull waits on the store until then (its action's closes)
  TransferSample transfers;  // the last exchange's, told with the next report
  // Overlapped modes: the loop steps on while the communication thread pushes and pulls. The end
  // of the step in progress, the steps since the last delta was handed over, and the steps the
  // delta on its way holds (1 in the other modes: a delta a step).
  absl::Time loop_at = absl::InfinitePast();
  int64_t unpushed_steps = 0;
  int64_t delta_steps = 1;
};

class Simulation {
 public:
  explicit Simulation(const ClusterSimOptions& options, std::unique_ptr<SyncPolicy> policy)
      : o_(options), policy_(std::move(policy)), random_(options.seed) {
    p2p_ = policy_->push_mode() == PushMode::kNone;
    if (!p2p_) delta_staleness_.emplace(policy_->push_mode() == PushMode::kRound);
    if (p2p_ && options.trainers <= kPeerStalenessTrainers) peer_staleness_.emplace();
    background_exchange_ = policy_->exchange_in_background();
    overlap_communication_ = policy_->overlap_communication();
  }

  // Calls the policy, counting the call and its wall-clock time.
  template <typename F>
  auto Timed(F&& call) -> decltype(call()) {
    const SteadyClock::time_point start = SteadyClock::now();
    auto result = call();
    policy_time_ += SteadyClock::now() - start;
    ++events_;
    return result;
  }

  absl::StatusOr<ClusterSimResult> Run() {
    const SteadyClock::time_point wall_start = SteadyClock::now();
    for (int i = 0; i < o_.trainers; ++i) {
      const double slowdown = !o_.slowdowns.empty() ? o_.slowdowns[i]
                              : i < o_.stragglers   ? o_.straggler_slowdown
                                                    : 1.0;
      RETURN_IF_ERROR(Join(slowdown, LinkOf(i)));
    }
    Schedule(kStart + kTick, Kind::kTick, 0);
    while (!done_) {
      const Event e = queue_.top();
      queue_.pop();
      now_ = kStart + kResolution * e.at;
      switch (e.kind) {
        case Kind::kTick: {
          Decisions decisions = Timed([&] { return policy_->OnTick(now_); });
          // Only the ticks are left and they decide nothing: no trainer will ever go on.
          idle_ticks_ = queue_.empty() && decisions.empty() ? idle_ticks_ + 1 : 0;
          if (idle_ticks_ > kStallTicks) {
            return absl::InternalError(
                absl::StrCat(policy_->name(), ": no trainer can go on at clock ",
                             policy_->MinClock().value_or(-1), " (the policy granted nothing for ",
                             absl::FormatDuration(kTick * kStallTicks), " of simulated time)"));
          }
          Handle(std::move(decisions));
          Schedule(now_ + kTick, Kind::kTick, 0);
          break;
        }
        case Kind::kGrant:
          StartStep(trainers_[e.trainer]);
          break;
        case Kind::kReport:
          RETURN_IF_ERROR(Report(e.trainer));
          break;
      }
      const std::optional<int64_t> min = policy_->MinClock();
      done_ = min && *min >= o_.clocks;
    }
    return Result(std::chrono::duration<double>(SteadyClock::now() - wall_start).count());
  }

 private:
  enum class Kind { kTick, kGrant, kReport };
  // 24 bytes: the queue holds an event per trainer, and its sifts are the simulator's hot loop.
  struct Event {
    int64_t at = 0;  // in kResolution units since kStart: exact (absl::Time's own resolution)
    uint64_t seq = 0;
    uint32_t trainer = 0;  // index into trainers_
    Kind kind = Kind::kTick;
    bool operator>(const Event& e) const { return at != e.at ? at > e.at : seq > e.seq; }
  };
  static constexpr absl::Time kStart = absl::UnixEpoch();
  static inline const absl::Duration kResolution = absl::Nanoseconds(1) / 4;
  static constexpr absl::Duration kTick = absl::Milliseconds(100);
  // Longer than any start timeout a policy could still be waiting out.
  static constexpr int kStallTicks = 3000;

  // Trainers are numbered from 1 in the order they joined (Join): id - 1 is their index.
  static size_t IndexOf(TrainerId id) { return static_cast<size_t>(id - 1); }

  void Schedule(absl::Time at, Kind kind, size_t trainer) {
    absl::Duration rest;
    const int64_t ticks = absl::IDivDuration(at - kStart, kResolution, &rest);
    queue_.push(Event{ticks, seq_++, static_cast<uint32_t>(trainer), kind});
  }

  LinkRates LinkOf(int index) const {
    return o_.links.empty() ? LinkRates{o_.link_bytes_per_second, o_.link_bytes_per_second}
                            : o_.links[static_cast<size_t>(index)];
  }

  absl::Status Join(double slowdown, LinkRates link) {
    SimTrainer t;
    t.id = trainers_.size() + 1;
    t.slowdown = slowdown;
    t.link = link;
    t.joined = now_;
    trainers_.push_back(t);
    Decisions decisions;
    absl::StatusOr<int64_t> start = Timed([&] { return policy_->OnJoin(t.id, now_, &decisions); });
    if (!start.ok()) return absl::InternalError(start.status().ToString());
    if (delta_staleness_) delta_staleness_->Joined(t.id, *start);
    if (peer_staleness_) peer_staleness_->Joined(t.id, *start);
    Handle(std::move(decisions));
    return absl::OkStatus();
  }

  // Carries decisions out as the coordinator's action thread does: one action at a time, a round
  // close costing close_latency before the grants that follow it go out, or, pipelined, the
  // grants going out as the close starts and their pulls served once it is done.
  void Handle(Decisions decisions) {
    if (decisions.empty()) return;
    const absl::Time start = std::max(now_, actions_free_);
    const absl::Time closed =
        start + o_.close_latency * static_cast<double>(decisions.close_rounds.size());
    rounds_closed_ += static_cast<int64_t>(decisions.close_rounds.size());
    if (delta_staleness_) {
      for (const RoundClose& close : decisions.close_rounds) delta_staleness_->Closed(close);
    }
    actions_free_ = closed;
    const bool pipelined =
        o_.pipeline_grants &&
        policy_->MayGrantWhileClosing(!decisions.close_rounds.empty(), decisions.grants);
    const absl::Time at = (pipelined ? start : closed) + o_.directive_latency;
    const int64_t min = policy_->MinClock().value_or(0);
    for (Grant& g : decisions.grants) {
      const size_t index = IndexOf(g.trainer);
      if (index >= trainers_.size() || !trainers_[index].live) continue;
      ++staleness_[g.clock - min];
      ++grants_;
      trainers_[index].grant = std::move(g);
      trainers_[index].served_from = closed;
      Schedule(at, Kind::kGrant, index);
    }
  }

  // `models` over a link of `bytes_per_second`.
  double TransferSeconds(double models, double bytes_per_second) const {
    return models * o_.model_bytes / bytes_per_second;
  }

  // A round's exchange of `t`: its own upload and download, and each sender's upload to all of
  // its receivers (granted in the same round, so their grants are the ones in hand).
  double ExchangeSeconds(const SimTrainer& t, double out, double in) const {
    double seconds =
        std::max(TransferSeconds(out, t.link.upload), TransferSeconds(in, t.link.download));
    for (TrainerId from : t.grant.exchange->receive_from) {
      const size_t index = IndexOf(from);
      if (index >= trainers_.size() || !trainers_[index].grant.exchange) continue;
      const SimTrainer& sender = trainers_[index];
      const double sends = static_cast<double>(sender.grant.exchange->send_to.size());
      seconds = std::max(seconds, TransferSeconds(sends, sender.link.upload));
    }
    return seconds;
  }

  // The grant arrived: communicate (pull or exchange), compute, push, then report.
  void StartStep(SimTrainer& t) {
    if (!t.live) return;
    double communicate = 0;
    if (t.grant.exchange) {
      const double out = static_cast<double>(t.grant.exchange->send_to.size());
      const double in = static_cast<double>(t.grant.exchange->receive_from.size());
      communicate = background_exchange_ ? std::max(TransferSeconds(out, t.link.upload),
                                                    TransferSeconds(in, t.link.download))
                                         : ExchangeSeconds(t, out, in);
      t.transfers = TransferSample{out * o_.model_bytes,
                                   TransferSeconds(out, t.link.upload),
                                   in * o_.model_bytes,
                                   TransferSeconds(in, t.link.download),
                                   static_cast<int>(out),
                                   {},
                                   {}};
      if (peer_staleness_ && !background_exchange_) {
        peer_staleness_->Averaged(t.id, t.grant.exchange->receive_from);
      }
    } else if (t.grant.pull.kind != PullSpec::Kind::kNone) {
      communicate = std::max(0.0, absl::ToDoubleSeconds(t.served_from - now_)) +
                    TransferSeconds(1, t.link.download);
      if (delta_staleness_ && t.grant.pull.kind == PullSpec::Kind::kLive) {
        delta_staleness_->ReadLive(t.id, t.grant.clock);
      } else if (delta_staleness_) {
        delta_staleness_->ReadRound(t.id, t.grant.pull.round, t.grant.pull.includes_clock);
      }
    }
    // A background multicast's models are averaged in as they arrive.
    if (peer_staleness_ && background_exchange_) peer_staleness_->Received(t.id, now_);
    const double push = p2p_ ? 0 : TransferSeconds(1, t.link.upload);
    if (overlap_communication_) {
      // The communication thread pulls while the loop steps on; at the first step's end after
      // the pull, the loop takes the pulled model and hands over the steps since the last
      // hand-over (at least one) as one delta, which the thread pushes and reports
      // (client/step_strategy.cc).
      const absl::Time pulled = now_ + absl::Seconds(communicate);
      // The first grant starts the loop; after it, the loop stepped on while the thread waited.
      if (t.loop_at == absl::InfinitePast()) t.loop_at = now_;
      while (t.loop_at < pulled || t.unpushed_steps == 0) {
        t.loop_at += absl::Seconds(Compute(t));
        ++t.unpushed_steps;
      }
      t.delta_steps = std::exchange(t.unpushed_steps, 0);
      Schedule(t.loop_at + absl::Seconds(push), Kind::kReport, IndexOf(t.id));
      return;
    }
    const double compute = Compute(t);
    // A background multicast does not hold the step: its transfers run on, a newer model
    // superseding an older one on a pair (client/background_multicast.h).
    const double until_report = background_exchange_ ? compute : communicate + compute + push;
    Schedule(now_ + absl::Seconds(until_report), Kind::kReport, IndexOf(t.id));
  }

  // One step of `t`, counted as its compute: its slowdown times the base step, jittered.
  double Compute(SimTrainer& t) {
    std::lognormal_distribution<double> jitter(0, o_.jitter_sigma);
    const double compute = absl::ToDoubleSeconds(o_.step) * t.slowdown * jitter(random_);
    t.compute_seconds += compute;
    return compute;
  }

  absl::Status Report(size_t index) {
    SimTrainer& t = trainers_[index];
    if (!t.live) return absl::OkStatus();
    const int64_t clock = t.grant.clock + 1;
    if (o_.leave_at_clock > 0 && index + 1 == static_cast<size_t>(o_.trainers) &&
        clock == o_.leave_at_clock) {
      t.live = false;
      t.left = now_;
      Handle(Timed([&] { return policy_->OnLeave(t.id, now_); }));
      return absl::OkStatus();
    }
    steps_ += t.delta_steps;
    ++deltas_;
    if (delta_staleness_) delta_staleness_->Pushed(t.id, clock);
    if (peer_staleness_) {
      peer_staleness_->Stepped(t.id, clock);
      // A background multicast carries the model of the step after its grant, over the upload.
      if (t.grant.exchange && background_exchange_) {
        const std::vector<TrainerId>& to = t.grant.exchange->send_to;
        peer_staleness_->Sent(
            t.id, to,
            now_ + absl::Seconds(TransferSeconds(static_cast<double>(to.size()), t.link.upload)));
      }
    }
    policy_->ObserveCompute(t.id, clock, t.compute_seconds);
    if (p2p_) policy_->ObserveTransfers(t.id, t.transfers);
    absl::StatusOr<Decisions> decisions =
        Timed([&] { return policy_->OnClock(t.id, clock, now_); });
    if (!decisions.ok()) {
      return absl::InternalError(absl::StrCat(policy_->name(), " refused trainer ", t.id,
                                              "'s report of clock ", clock, ": ",
                                              decisions.status().ToString()));
    }
    Handle(*std::move(decisions));
    if (o_.rejoin_at_clock > 0 && !rejoined_ && trainers_.size() > 0 &&
        !trainers_[static_cast<size_t>(o_.trainers) - 1].live &&
        policy_->MinClock().value_or(0) >= o_.rejoin_at_clock) {
      rejoined_ = true;
      return Join(1.0, LinkOf(o_.trainers - 1));
    }
    return absl::OkStatus();
  }

  ClusterSimResult Result(double wall_seconds) const {
    ClusterSimResult r;
    r.mode = policy_->name();
    r.trainers = o_.trainers;
    r.simulated_seconds = absl::ToDoubleSeconds(now_ - kStart);
    r.seconds_per_clock = r.simulated_seconds / static_cast<double>(o_.clocks);
    double compute = 0, present = 0;
    for (const SimTrainer& t : trainers_) {
      compute += t.compute_seconds;
      present += absl::ToDoubleSeconds(std::min(t.left, now_) - t.joined);
    }
    r.compute_time_ratio = present > 0 ? std::min(1.0, compute / present) : 0;
    r.staleness_p50 = HistogramQuantile(staleness_, 0.5);
    r.staleness_p99 = HistogramQuantile(staleness_, 0.99);
    r.staleness_max = staleness_.empty() ? 0 : static_cast<double>(staleness_.rbegin()->first);
    r.steps_per_second =
        r.simulated_seconds > 0 ? static_cast<double>(steps_) / r.simulated_seconds : 0;
    // In steps of the job: each delta (or peer's step) weighs 1/N of one under the default
    // step-size rule (and the peers' averages).
    const double n = static_cast<double>(o_.trainers);
    if (delta_staleness_) {
      // A missed delta that held several steps (overlapped modes) missed them all: weighed by
      // the mean steps a delta held (1 in the other modes).
      const double steps_per_delta =
          deltas_ > 0 ? static_cast<double>(steps_) / static_cast<double>(deltas_) : 1;
      r.delta_staleness_mean = delta_staleness_->Mean() * steps_per_delta / n;
      r.delta_staleness_p99 = delta_staleness_->Quantile(0.99) * steps_per_delta / n;
    } else if (peer_staleness_) {
      r.delta_staleness_mean = peer_staleness_->Mean() / n;
      r.delta_staleness_p99 = peer_staleness_->Quantile(0.99) / n;
    }
    r.rounds_closed = rounds_closed_;
    r.events = events_;
    r.grants = grants_;
    r.policy_us_per_event = events_ > 0
                                ? 1e6 * std::chrono::duration<double>(policy_time_).count() /
                                      static_cast<double>(events_)
                                : 0;
    r.wall_seconds = wall_seconds;
    return r;
  }

  const ClusterSimOptions& o_;
  std::unique_ptr<SyncPolicy> policy_;
  std::mt19937_64 random_;
  bool p2p_ = false;
  bool background_exchange_ = false;    // peers' models sent beside the steps (the -ssp modes)
  bool overlap_communication_ = false;  // pushes and pulls beside the steps (wbsp-overlap)
  std::vector<SimTrainer> trainers_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  absl::Time now_ = kStart;
  absl::Time actions_free_ = kStart;
  bool done_ = false;
  bool rejoined_ = false;
  int idle_ticks_ = 0;
  std::map<int64_t, int64_t> staleness_;           // staleness at grant -> grants
  std::optional<DeltaStaleness> delta_staleness_;  // store modes
  std::optional<PeerStaleness> peer_staleness_;  // peer-to-peer modes, up to kPeerStalenessTrainers
  int64_t steps_ = 0;                            // reported by every trainer
  int64_t deltas_ = 0;  // reports: more steps than reports where a delta holds several
  int64_t grants_ = 0;
  int64_t rounds_closed_ = 0;
  int64_t events_ = 0;
  SteadyClock::duration policy_time_{};
};

}  // namespace

absl::Status CheckClusterSimOptions(const ClusterSimOptions& options) {
  if (options.trainers < 1 || options.trainers > 1'000'000) {
    return absl::InvalidArgumentError("trainers must be between 1 and 1,000,000");
  }
  if (options.stragglers < 0 || options.stragglers > options.trainers) {
    return absl::InvalidArgumentError("stragglers must be between 0 and the trainers");
  }
  if (!(options.straggler_slowdown >= 1) || !(options.jitter_sigma >= 0) ||
      !(options.model_bytes >= 0) || !(options.link_bytes_per_second > 0) ||
      options.step <= absl::ZeroDuration() || options.directive_latency < absl::ZeroDuration() ||
      options.close_latency < absl::ZeroDuration() || options.clocks < 1) {
    return absl::InvalidArgumentError(
        "need slowdown >= 1, jitter >= 0, model bytes >= 0, a positive link rate and step, "
        "latencies >= 0 and clocks >= 1");
  }
  if (!options.slowdowns.empty()) {
    if (static_cast<int>(options.slowdowns.size()) != options.trainers) {
      return absl::InvalidArgumentError(absl::StrCat("the profile has ", options.slowdowns.size(),
                                                     " slowdowns for ", options.trainers,
                                                     " trainers: give one per trainer"));
    }
    for (double s : options.slowdowns) {
      if (!(s >= 1)) return absl::InvalidArgumentError("every slowdown of the profile is >= 1");
    }
  }
  if (!options.links.empty()) {
    if (static_cast<int>(options.links.size()) != options.trainers) {
      return absl::InvalidArgumentError(absl::StrCat("there are ", options.links.size(),
                                                     " links for ", options.trainers,
                                                     " trainers: give one per trainer"));
    }
    for (const LinkRates& link : options.links) {
      for (double rate : {link.upload, link.download}) {
        if (!(rate > 0) || std::isinf(rate)) {
          return absl::InvalidArgumentError("every link rate is positive and finite");
        }
      }
    }
  }
  if (options.leave_at_clock > 0 && options.trainers < 2) {
    return absl::InvalidArgumentError("a trainer can leave only a job of two or more");
  }
  if (options.rejoin_at_clock > 0 && options.rejoin_at_clock <= options.leave_at_clock) {
    return absl::InvalidArgumentError("a trainer rejoins after it left: rejoin_at > leave_at");
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSimResult> SimulateCluster(const ClusterSimOptions& options) {
  RETURN_IF_ERROR(CheckClusterSimOptions(options));
  PolicyOptions policy = options.policy;
  policy.min_trainers = options.trainers;
  absl::StatusOr<std::unique_ptr<SyncPolicy>> made = MakePolicy(policy);
  if (!made.ok()) return made.status();
  Simulation simulation(options, *std::move(made));
  return simulation.Run();
}

absl::StatusOr<ClusterSimResult> SimulateCluster(const ClusterSimOptions& options,
                                                 std::unique_ptr<SyncPolicy> policy) {
  RETURN_IF_ERROR(CheckClusterSimOptions(options));
  if (policy == nullptr) return absl::InvalidArgumentError("no policy to simulate");
  Simulation simulation(options, std::move(policy));
  return simulation.Run();
}

}  // namespace syncopate::sync
