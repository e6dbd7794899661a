// SelMcast's SSP receiver selection (Luo et al., TSC 2024, Algorithm 2): run online whenever one
// trainer (kappa) becomes ready to multicast, while other trainers' multicasts are still in
// flight. It picks kappa's receivers and may preempt receivers of the in-flight multicasts to make
// room, except those that are nearly delivered (less than eta of the volume left) or that the
// k-round rule required. Pure function; no clocks, no threads.
//
// Choices where the paper is ambiguous:
//   - Tasks are served in non-decreasing order of tau (the one that would block soonest picks its
//     lightest receivers first), as the listing says; the text says the opposite.
//   - A Pareto addition must stay within its own task's deadline and must not push the receiver's
//     finish time past the deadline of any other task still sending to it, so no task is delayed.
#ifndef SYNCOPATE_SYNC_ONLINE_MULTICAST_SELECTION_H_
#define SYNCOPATE_SYNC_ONLINE_MULTICAST_SELECTION_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "sync/multicast_selection.h"

namespace syncopate::sync {

struct OnlineMulticastProblem {
  // Rates, every sender's full volume v_i, p_i and the layer, over all n trainers.
  MulticastProblem links;
  int ready = 0;      // kappa: the trainer whose multicast is being planned
  double eta = 0.75;  // keep an in-flight receiver with less than eta * v_i left
  // A Pareto addition must keep its sender and receiver within (1 - m) x the deadlines it is held
  // to (clamped to [0, 1]; NaN counts as 0): the paper's rule is m = 0, which trusts the measured
  // rates exactly. Unlike SelectSelMcast's pareto_margin, the sender is checked under L3 too, and
  // the margin also applies to the in-flight pairs the Pareto step may keep, so it may preempt one
  // that would fit without it (the policy plans under L7).
  double pareto_margin = 0;
  // The multicasts in flight (kappa's row is ignored): in_flight.at(i, j) is "i is sending to j".
  PairMatrix in_flight;
  // Bytes still to deliver for each in-flight pair (n*n, row-major; read where in_flight is set).
  std::vector<double> remaining;
  // In-flight pairs the k-round rule required when their multicast was planned: never preempted.
  PairMatrix pinned;
  // tau_i: seconds trainer i would still block (wait before its next multicast) if its multicast
  // finished now (n entries; kappa's included).
  std::vector<double> tau;

  int size() const { return links.size(); }
  double Remaining(int i, int j) const { return remaining[static_cast<size_t>(i) * size() + j]; }
  // INVALID_ARGUMENT for mismatched sizes, kappa out of range, eta outside (0, 1], a negative or
  // non-finite tau or remaining volume, or an invalid `links`.
  absl::Status Validate() const;
};

struct OnlineMulticastPlan {
  // Every task's receivers after this decision (kappa's row: its new multicast).
  PairMatrix sends;
  // In-flight pairs dropped by this decision: their senders stop sending to them, and the pairs
  // are not re-added in this round (they are no longer candidates).
  PairMatrix preempted;
  // Per task, the deadline t_i the additions respected (0 for trainers without a task).
  std::vector<double> deadline_seconds;
  // The pairs the Pareto step added (a subset of `sends`): sent at low priority, on the upload the
  // others leave idle.
  PairMatrix additions;
};

// Algorithm 2 for trainer `problem.ready`, planning its multicast of round `round` (kappa's
// forced pairs come from `history`). Deterministic: ties go to the lower index.
OnlineMulticastPlan SelectSelMcastOnline(const OnlineMulticastProblem& problem,
                                         const PairHistory& history, int64_t round);

// Orpheus under SSP (orpheus-ssp), the baseline selmcast-ssp is measured against: trainer
// `problem.ready`'s forced pairs, then receivers drawn uniformly at random from the rest until it
// has p. No Pareto additions, no preemption: every in-flight pair is kept (deadline_seconds stay
// 0).
OnlineMulticastPlan SelectOrpheusOnline(const OnlineMulticastProblem& problem,
                                        const PairHistory& history, int64_t round,
                                        std::mt19937_64& rng);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_ONLINE_MULTICAST_SELECTION_H_
