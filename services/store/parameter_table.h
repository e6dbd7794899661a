// One shard's model: named float32 tensors, the live version, round accumulators and published
// round snapshots, the trainers allowed to push, and the idempotency record of applied pushes.
#ifndef SYNCOPATE_STORE_PARAMETER_TABLE_H_
#define SYNCOPATE_STORE_PARAMETER_TABLE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "store/push_assembler.h"
#include "tensor/tensor.h"

namespace syncopate::store {

// An immutable copy of the model: a published round, or a copy of the live model for one pull.
// Shared between concurrent pulls.
struct ModelSnapshot {
  int64_t round = -1;  // -1 for a live copy
  int64_t live_version = 0;
  std::vector<tensor::TensorSpec> specs;   // name order
  std::vector<std::vector<float>> values;  // parallel to specs
  uint32_t checksum = 0;                   // CRC-32 over values in order; 0 for live copies
};

struct ApplyResult {
  int64_t live_version = 0;
  bool duplicate = false;
  bool already_initialized = false;
};

struct CloseResult {
  int64_t live_version = 0;
  uint32_t checksum = 0;
  uint32_t pushes = 0;
};

struct TrainerKey {
  uint64_t id = 0;
  uint64_t incarnation = 0;
};

// Thread-safe. Every mutation happens entirely or not at all.
class ParameterTable {
 public:
  // Snapshots kept for round pulls; older ones are dropped (a pull of them is NOT_FOUND).
  explicit ParameterTable(int snapshots_kept = 4) : snapshots_kept_(snapshots_kept) {}

  std::optional<tensor::TensorSpec> Spec(const std::string& name) const;
  std::vector<tensor::TensorSpec> Specs() const;
  int64_t live_version() const;
  int64_t last_closed_round() const;  // -1 before anything was initialized

  // Replaces the set of trainers allowed to push. Trainers no longer listed become "departed".
  void SetMembers(const std::vector<TrainerKey>& members);

  // Creates the push's tensors with its values as initial model. Tensors that exist with the same
  // shape are left untouched; a different shape is FAILED_PRECONDITION (and nothing is created).
  // While no round has closed, the round-0 snapshot is (re)published to include new tensors.
  absl::StatusOr<ApplyResult> Initialize(const StagedPush& push);

  // Applies a validated delta. UNAUTHENTICATED: trainer never a member; FAILED_PRECONDITION:
  // departed trainer, stale incarnation, round already closed or not the next one;
  // INVALID_ARGUMENT: no apply mode or a non-finite weight. A sequence at or below the last applied
  // one for this (trainer, incarnation) is acknowledged as a duplicate and not applied.
  absl::StatusOr<ApplyResult> Apply(const StagedPush& push);

  // Adds the mean of round `round`'s deltas to the model and publishes the round snapshot. A round
  // already closed returns its recorded result (idempotent). FAILED_PRECONDITION if `round` is not
  // the next round or nothing was initialized.
  absl::StatusOr<CloseResult> CloseRound(int64_t round);

  // A published round (NOT_FOUND when dropped, FAILED_PRECONDITION when not closed yet), or a copy
  // of the live model (round < 0).
  absl::StatusOr<std::shared_ptr<const ModelSnapshot>> Snapshot(int64_t round) const;

 private:
  struct Tensor {
    tensor::TensorSpec spec;
    std::vector<float> values;
    std::vector<float> round_sum;  // Σ weight·delta of the open round (empty when none)
    double round_weight = 0;       // Σ weight of the open round's pushes
  };

  absl::Status CheckMember(const v1::PushHeader& header) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const ModelSnapshot> MakeSnapshot(int64_t round) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Publish(std::shared_ptr<const ModelSnapshot> snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int snapshots_kept_;
  mutable absl::Mutex mu_;
  std::map<std::string, Tensor> tensors_ ABSL_GUARDED_BY(mu_);
  int64_t live_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_closed_round_ ABSL_GUARDED_BY(mu_) = -1;
  uint32_t open_round_pushes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::shared_ptr<const ModelSnapshot>> snapshots_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, CloseResult> close_results_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, uint64_t> member_incarnation_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> ever_members_ ABSL_GUARDED_BY(mu_);
  // (trainer id, incarnation) -> last applied sequence.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> last_sequence_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_PARAMETER_TABLE_H_
