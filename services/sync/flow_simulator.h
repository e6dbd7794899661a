// A fluid, flow-level simulator of concurrent transfers over shared capacities, with per-flow
// max-min fair sharing (progressive filling), as in SelMcast's evaluation. A transfer moves `bytes`
// at one rate through every resource it names (a sender's upload, its receivers' downloads); the
// rates of the transfers through a resource never exceed its capacity. Priorities are strict and
// work-conserving: priority 0 shares the capacities first, priority 1 what it leaves, and so on.
#ifndef SYNCOPATE_SYNC_FLOW_SIMULATOR_H_
#define SYNCOPATE_SYNC_FLOW_SIMULATOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "sync/multicast_selection.h"

namespace syncopate::sync {

struct Transfer {
  double bytes = 0;
  std::vector<int> resources;  // indices into the capacities; each at most once
  int priority = 0;            // lower runs first
};

// Max-min fair rates of `transfers` (all active) over `capacities` (bytes/s), class by class.
std::vector<double> MaxMinRates(const std::vector<double>& capacities,
                                const std::vector<Transfer>& transfers);

// Each transfer's finish time (seconds from 0) when all start at 0 and rates are re-shared
// max-min fairly whenever one finishes. INVALID_ARGUMENT for a non-positive capacity, negative
// bytes, or an unknown resource.
absl::StatusOr<std::vector<double>> SimulateTransfers(const std::vector<double>& capacities,
                                                      const std::vector<Transfer>& transfers);

// The transfers of one multicast round: resource i is trainer i's upload, n + j trainer j's
// download. L3: one transfer per sender to all its receivers at once (it runs at the slowest
// receiver's share); L7: one transfer per (sender, receiver) pair. The plan's additions travel
// at priority 1 (in L3, as a second multicast per sender), everything else at priority 0.
std::vector<Transfer> MulticastTransfers(const MulticastProblem& problem,
                                         const MulticastPlan& plan);
std::vector<double> MulticastCapacities(const MulticastProblem& problem);

struct RoundTimes {
  double required_seconds = 0;  // when every priority-0 transfer finished
  double all_seconds = 0;       // when every transfer finished (the round, coflow semantics)
};
absl::StatusOr<RoundTimes> SimulateMulticastRound(const MulticastProblem& problem,
                                                  const MulticastPlan& plan);

// A lower bound on any plan's completion time that gives every sender p_i receivers: each sender
// sends at least once (L3) or p_i times (L7) at its upload rate, and all the receivers together
// receive at least sum_i p_i * volume_i at their total download rate.
double CompletionLowerBound(const MulticastProblem& problem);

// One round's problem as SelMcast's evaluation draws it: every trainer multicasts `volume` bytes;
// download rates are mean * (1 + spread * x) and upload rates mean * upload_scale * (1 + spread *
// x), each x drawn independently from U[-1, 1]; p_i = `min_receivers` for every trainer.
MulticastProblem RandomBandwidthProblem(int trainers, double mean, double spread,
                                        double upload_scale, double volume, int min_receivers,
                                        MulticastLayer layer, std::mt19937_64& rng);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_FLOW_SIMULATOR_H_
