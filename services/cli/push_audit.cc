#include "cli/push_audit.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "store/checkpoint.h"

namespace syncopate::cli {
namespace {

struct TracedPushes {
  int64_t acknowledged = 0;  // "pushed" events
  int64_t given_up = 0;      // "push_given_up" events
};

// The pushes trainer `rank` traced (none without a trace).
TracedPushes TracedPushesOf(const std::string& run_dir, uint32_t rank) {
  std::ifstream trace(absl::StrCat(run_dir, "/trainer-", rank, ".trace.jsonl"));
  TracedPushes pushes;
  std::string line;
  while (std::getline(trace, line)) {
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!event.is_object()) continue;
    const std::string kind = event.value("event", "");
    pushes.acknowledged += kind == "pushed";
    pushes.given_up += kind == "push_given_up";
  }
  return pushes;
}

int64_t CountOf(const std::map<TrainerIdentity, int64_t>& counts, const TrainerIdentity& trainer) {
  auto it = counts.find(trainer);
  return it == counts.end() ? 0 : it->second;
}

}  // namespace

PushAudit ComparePushes(const std::vector<std::map<TrainerIdentity, int64_t>>& taken,
                        const std::map<TrainerIdentity, int64_t>& acknowledged,
                        const std::map<TrainerIdentity, int64_t>& given_up) {
  PushAudit audit;
  for (const auto& [trainer, pushes] : given_up) {
    if (acknowledged.count(trainer) > 0) audit.given_up += pushes;
  }
  for (const std::map<TrainerIdentity, int64_t>& shard : taken) {
    ++audit.shards;
    for (const auto& [trainer, pushes] : acknowledged) {
      const int64_t got = CountOf(shard, trainer);
      audit.pushes += pushes;
      audit.lost += std::max<int64_t>(0, pushes - got);
      audit.doubled += std::max<int64_t>(0, got - pushes - CountOf(given_up, trainer));
    }
  }
  return audit;
}

absl::StatusOr<PushAudit> AuditPushes(const std::string& run_dir, uint32_t shard_count,
                                      const v1::ClusterStatus& status) {
  std::vector<std::map<TrainerIdentity, int64_t>> taken;
  for (uint32_t shard = 0; shard < shard_count; ++shard) {
    absl::StatusOr<store::ShardCheckpoint> checkpoint = store::ReadCheckpoint(
        store::CheckpointPath(run_dir + "/checkpoints", shard), shard, shard_count);
    if (!checkpoint.ok()) return checkpoint.status();
    if (checkpoint->state.model->specs.empty()) continue;  // no tensor here: nobody pushes
    std::map<TrainerIdentity, int64_t>& counts = taken.emplace_back();
    for (const auto& [trainer, pushes] : checkpoint->state.taken) {
      counts[{trainer.id, trainer.incarnation}] = pushes;
    }
  }
  std::map<TrainerIdentity, int64_t> acknowledged;
  std::map<TrainerIdentity, int64_t> given_up;
  for (const v1::TrainerStatus& t : status.trainers()) {
    const TracedPushes traced = TracedPushesOf(run_dir, t.rank());
    acknowledged[{t.trainer_id(), t.incarnation()}] = traced.acknowledged;
    given_up[{t.trainer_id(), t.incarnation()}] = traced.given_up;
  }
  return ComparePushes(taken, acknowledged, given_up);
}

}  // namespace syncopate::cli
