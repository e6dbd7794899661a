// Builds the policy a mode name stands for.
#ifndef SYNCOPATE_SYNC_POLICY_FACTORY_H_
#define SYNCOPATE_SYNC_POLICY_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sync/policy.h"

namespace syncopate::sync {

struct PolicyOptions {
  std::string mode = "bsp";
  // SSP's bound s (ignored by bsp and asp).
  int64_t staleness = 3;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

// The modes this build implements, in documentation order.
std::vector<std::string> SupportedModes();

// INVALID_ARGUMENT for an unknown mode or a negative SSP bound.
absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_FACTORY_H_
