#include "cli/push_audit.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "store/checkpoint.h"

namespace syncopate::cli {
namespace {

// Pushes trainer `rank` saw acknowledged: its trace's "pushed" events (0 without a trace).
int64_t AcknowledgedPushes(const std::string& run_dir, uint32_t rank) {
  std::ifstream trace(absl::StrCat(run_dir, "/trainer-", rank, ".trace.jsonl"));
  int64_t pushes = 0;
  std::string line;
  while (std::getline(trace, line)) {
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    pushes += event.is_object() && event.value("event", "") == "pushed";
  }
  return pushes;
}

}  // namespace

PushAudit ComparePushes(const std::vector<std::map<TrainerIdentity, int64_t>>& taken,
                        const std::map<TrainerIdentity, int64_t>& acknowledged) {
  PushAudit audit;
  for (const std::map<TrainerIdentity, int64_t>& shard : taken) {
    ++audit.shards;
    for (const auto& [trainer, pushes] : acknowledged) {
      auto it = shard.find(trainer);
      const int64_t got = it == shard.end() ? 0 : it->second;
      audit.pushes += pushes;
      audit.lost += std::max<int64_t>(0, pushes - got);
      audit.doubled += std::max<int64_t>(0, got - pushes);
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
  for (const v1::TrainerStatus& t : status.trainers()) {
    acknowledged[{t.trainer_id(), t.incarnation()}] = AcknowledgedPushes(run_dir, t.rank());
  }
  return ComparePushes(taken, acknowledged);
}

}  // namespace syncopate::cli
