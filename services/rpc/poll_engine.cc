#include "rpc/poll_engine.h"

#include <cstdlib>

namespace syncopate::rpc {
namespace {

std::optional<std::string> Variable(const char* name) {
  const char* value = getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

}  // namespace

std::vector<EnvironmentVariable> PollEnvironment(const std::optional<std::string>& strategy,
                                                 const std::optional<std::string>& backup_poll) {
  std::vector<EnvironmentVariable> added;
  if (!strategy) added.push_back({kPollStrategyVariable, "poll"});
  if (strategy.value_or("poll") == "poll" && !backup_poll) {
    added.push_back({kBackupPollVariable, "20"});
  }
  return added;
}

void PreferPollForAFewConnections() {
  for (const EnvironmentVariable& variable :
       PollEnvironment(Variable(kPollStrategyVariable), Variable(kBackupPollVariable))) {
    setenv(variable.name.c_str(), variable.value.c_str(), /*overwrite=*/0);
  }
}

}  // namespace syncopate::rpc
