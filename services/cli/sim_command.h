// `syncopate sim`: a whole job under each mode, simulated (sync/cluster_sim.h): round time,
// compute-time ratio, staleness, and what the policy costs per event, at up to many thousands of
// trainers.
#ifndef SYNCOPATE_CLI_SIM_COMMAND_H_
#define SYNCOPATE_CLI_SIM_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sync/cluster_sim.h"

namespace syncopate::cli {

struct SimCommand {
  std::vector<std::string> modes = sync::SupportedModes();
  sync::ClusterSimOptions sim;  // its policy.mode is set per mode
};

// One result per mode, in order; the first mode's error stops the run.
absl::StatusOr<std::vector<sync::ClusterSimResult>> RunSim(const SimCommand& command);

// A table: one row per mode.
std::string FormatSim(const std::vector<sync::ClusterSimResult>& rows);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_SIM_COMMAND_H_
