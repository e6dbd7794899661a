// `syncopate sim multicast`: SelMcast's and Orpheus's receiver selection from the sync library,
// replayed round after round over a simulated cluster (flow-level transfer times with max-min fair
// sharing), reporting completion time and multicast scale as in SelMcast's evaluation.
#ifndef SYNCOPATE_CLI_MULTICAST_SIM_COMMAND_H_
#define SYNCOPATE_CLI_MULTICAST_SIM_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace syncopate::cli {

struct MulticastSimOptions {
  std::vector<std::string> modes = {"selmcast", "orpheus"};
  int trainers = 100;
  double bandwidth_spread = 0.5;        // lambda: rates are mean * (1 + lambda * U[-1, 1])
  double upload_scale = 1.0;            // mu: uploads are mu times the downloads on average
  double bandwidth_gbps = 40;           // mean rate
  double volume_mb = 200;               // bytes each trainer multicasts per round
  double min_receivers_fraction = 0.3;  // p = ceil(fraction * n)
  int k = 4;                            // every pair synchronizes at least once per k+1 rounds
  std::string layer = "l3";             // l3 (network multicast) or l7 (unicast fan-out)
  int rounds = 20;
  int trials = 5;
  uint64_t seed = 1;
  std::string json_out;  // also write the rows here as JSON ("" for none)
};

// One mode's figures, averaged over every round of every trial.
struct MulticastSimRow {
  std::string mode;
  double normalized_completion = 0;  // simulated round time / a lower bound on the optimum
  double completion_seconds = 0;     // simulated round time: every transfer done
  double required_seconds = 0;       // ...every transfer but SelMcast's Pareto additions done
  double estimated_seconds = 0;      // the selection's own bottleneck estimate
  double multicast_scale = 0;        // receivers per sender / (n - 1)
  double selection_ms_mean = 0;      // wall-clock time of one selection
  double selection_ms_max = 0;
};

// INVALID_ARGUMENT for options out of range; the same seed gives the same figures (except the
// selection times, which are measured).
absl::StatusOr<std::vector<MulticastSimRow>> RunMulticastSim(const MulticastSimOptions& options);

std::string FormatMulticastSim(const MulticastSimOptions& options,
                               const std::vector<MulticastSimRow>& rows);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_MULTICAST_SIM_COMMAND_H_
