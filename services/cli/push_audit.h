// Exactly once, checked end to end after a `syncopate local` run (docs/faults.md): each store
// shard's count of the pushes it took in from every trainer, as its final checkpoint holds it,
// against the pushes that trainer saw acknowledged, as its trace holds them. A push a shard lost
// (a restart no trainer made up for) shows as lost; one it took twice, as doubled. A push the
// trainer gave up as it stopped (its trace's push_given_up) may have reached some shards and not
// others: a shard may hold it or not, and it is neither.
#ifndef SYNCOPATE_CLI_PUSH_AUDIT_H_
#define SYNCOPATE_CLI_PUSH_AUDIT_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::cli {

using TrainerIdentity = std::pair<uint64_t, uint64_t>;  // trainer id, incarnation

struct PushAudit {
  int shards = 0;        // shards audited (those holding tensors)
  int64_t pushes = 0;    // acknowledged pushes compared, over trainers and shards
  int64_t lost = 0;      // acknowledged but not taken in by a shard
  int64_t doubled = 0;   // taken in by a shard more often than acknowledged (and given up)
  int64_t given_up = 0;  // given up by stopping trainers: a shard may have taken them or not
};

// Compares every shard's counts (`taken`, one map per shard) with `acknowledged`, allowing each
// shard to hold up to `given_up` more of a trainer's pushes.
PushAudit ComparePushes(const std::vector<std::map<TrainerIdentity, int64_t>>& taken,
                        const std::map<TrainerIdentity, int64_t>& acknowledged,
                        const std::map<TrainerIdentity, int64_t>& given_up = {});

// Reads the final checkpoints RUN/checkpoints/shard-<i>.ckpt (of `shard_count`) and the traces
// RUN/trainer-<rank>.trace.jsonl of the trainers in `status` (the coordinator's last status: each
// rank's identity), and compares them. Call it once every process has stopped. A checkpoint's
// refusal as ReadCheckpoint gives it (NOT_FOUND, DATA_LOSS, FAILED_PRECONDITION).
absl::StatusOr<PushAudit> AuditPushes(const std::string& run_dir, uint32_t shard_count,
                                      const v1::ClusterStatus& status);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_PUSH_AUDIT_H_
