#include "sync/policy_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sync/bounded_staleness_policy.h"

namespace syncopate::sync {

std::vector<std::string> SupportedModes() { return {"bsp", "asp", "ssp"}; }

absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options) {
  BoundedStalenessConfig config;
  config.name = options.mode;
  config.min_trainers = options.min_trainers;
  config.start_timeout = options.start_timeout;
  if (options.mode == "bsp") {
    config.staleness = 0;
    config.round_snapshots = true;
  } else if (options.mode == "asp") {
    config.staleness = -1;
  } else if (options.mode == "ssp") {
    if (options.staleness < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ssp needs a staleness >= 0, got ", options.staleness));
    }
    config.staleness = options.staleness;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown mode '", options.mode, "' (supported: ",
                                                   absl::StrJoin(SupportedModes(), ", "), ")"));
  }
  return std::make_unique<BoundedStalenessPolicy>(std::move(config));
}

}  // namespace syncopate::sync
