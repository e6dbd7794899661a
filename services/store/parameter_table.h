// One shard's model: named float32 tensors, the live version, round accumulators and published
// round snapshots, the trainers allowed to push, and the idempotency record of applied pushes.
#ifndef SYNCOPATE_STORE_PARAMETER_TABLE_H_
#define SYNCOPATE_STORE_PARAMETER_TABLE_H_

#include <atomic>
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
#include "rpc/push_assembler.h"
#include "store/round_sum.h"
#include "store/tensor_buffers.h"
#include "tensor/tensor.h"

namespace syncopate::store {

// An immutable view of the model: a published round, or the live model for one pull or one
// checkpoint. Shared between concurrent pulls. Taking one copies no values: each tensor's values
// are shared with the live model until a push or a close changes that tensor, which then writes a
// fresh copy (copy on write), so what a snapshot holds never changes. The cost: while a snapshot
// is held (a pull streaming, a checkpoint encoding, a kept round: in round modes the newest round
// always shares the live tensors, so a close that adds push by push copies the tensors it
// changes), the next write to each of its tensors copies that tensor under the table's exclusive
// lock, into a recycled buffer (TensorBuffers). A close from the pushes' sum (RoundSum) copies
// nothing: the sum's buffer becomes the new values.
struct ModelSnapshot {
  int64_t round = -1;  // -1 for the live model
  int64_t live_version = 0;
  std::vector<tensor::TensorSpec> specs;                          // name order
  std::vector<std::shared_ptr<const std::vector<float>>> values;  // parallel to specs
  uint32_t checksum = 0;  // tensor::ModelChecksum over values in order; 0 for the live model

  const std::vector<float>& tensor(size_t i) const { return *values[i]; }
};

struct ApplyResult {
  int64_t live_version = 0;
  bool duplicate = false;
  bool already_initialized = false;
  // The checkpoint epoch the push was taken in (a duplicate: the original's when it was the
  // trainer's last push, else -1), and the epoch below which every push is in a written checkpoint.
  int64_t epoch = 0;
  int64_t durable_epoch = 0;
  float weight = 0;  // the weight the push was taken at (0: a duplicate)
};

struct CloseResult {
  int64_t live_version = 0;
  uint32_t checksum = 0;
  uint32_t pushes = 0;
  bool already_closed = false;  // closed before (a retry): nothing changed
  // Added to the model from the sum kept as its pushes arrived (RoundSum): one pass, not one per
  // push.
  bool summed_on_arrival = false;
};

struct TrainerKey {
  uint64_t id = 0;
  uint64_t incarnation = 0;

  bool operator<(const TrainerKey& o) const {
    return id != o.id ? id < o.id : incarnation < o.incarnation;
  }
};

// One trainer's share of a round: its pending ROUND pushes with clock <= `clock`.
struct RoundCut {
  TrainerKey trainer;
  int64_t clock = 0;
};

// What a shard must keep across a restart to resume a job (checkpoint.h writes it): the live model,
// the last closed round (the live model is its snapshot in round modes), each trainer's last cut
// and its last applied push sequence, the round pushes still pending (however long a round takes
// to close, a restart loses only what came after the checkpoint), and the membership in force (so
// that a coordinator that restarts with every shard still finds the job).
struct DurableState {
  std::shared_ptr<const ModelSnapshot> model;  // the live model, or its round snapshot
  int64_t last_closed_round = -1;
  std::vector<RoundCut> cuts;
  std::vector<std::pair<TrainerKey, uint64_t>> sequences;
  // Pending ROUND pushes, each trainer's in clock order (shared with the table: immutable).
  std::vector<std::shared_ptr<const rpc::StagedPush>> pending;
  // How many pushes of each trainer the table has taken in (ParameterTable::Taken).
  std::vector<std::pair<TrainerKey, int64_t>> taken;
  bool has_membership = false;  // false until a coordinator first set one
  std::vector<TrainerKey> members;
  // The name of every trainer id a membership named, in id order (ParameterTable::NameMembers).
  std::vector<std::pair<uint64_t, std::string>> names;
  std::optional<v1::JobEnd> job_end;  // Membership.job_end, kept as the coordinator stated it
  int64_t version = 0;                // ParameterTable::durable_version() at the cut
  // The epoch this cut closed (numbered per process, not kept on disk): it holds every push this
  // table took in an earlier epoch.
  int64_t epoch = 0;
};

// A membership that gave a trainer id another name than the one it had.
struct Rename {
  uint64_t trainer_id = 0;
  std::string from;
  std::string to;
};

// The shard once a membership is in force.
struct MembershipResult {
  int64_t last_closed_round = -1;
  bool holds_model = false;
  int64_t rounds_skipped = 0;  // to catch up with the coordinator's round
};

// The membership in force and each member's last cut (-1: no round took its pushes yet).
struct Roster {
  // false until a coordinator first set one (in this process, or before a restored checkpoint)
  bool has_membership = false;
  std::vector<RoundCut> members;
  std::optional<v1::JobEnd> job_end;  // how the job ends, once its coordinator began ending it
};

// INVALID_ARGUMENT unless `job_end` is one a coordinator states (Membership.job_end): a final
// round >= 1, a reason of at most 256 printable ASCII characters (it is logged), an accuracy in
// [0, 1] if any.
absl::Status CheckJobEnd(const v1::JobEnd& job_end);

// How the job applies pushes, as the coordinator states it with the membership. A push in another
// apply mode is refused, and a push's weight is the job's, never the header's: IMMEDIATE pushes
// weigh `immediate_weight` (1/N under sum/n, 1 under sum), a re-sent IMMEDIATE sum 1 (its trainer
// summed weight x delta); ROUND pushes weigh 1, a re-sent ROUND sum the pushes it carries.
struct PushRule {
  // APPLY_MODE_NONE (or UNSPECIFIED): the job takes no pushes (the peer-to-peer modes exchange
  // models).
  v1::ApplyMode apply_mode = v1::APPLY_MODE_NONE;
  float immediate_weight = 1;
  // How the job's pushes carry their values: a push with another codec is refused.
  v1::Codec codec = v1::CODEC_NONE;
};

struct CloseRequest {
  int64_t round = 0;
  std::vector<RoundCut> cuts;
  v1::Aggregation aggregation = v1::AGGREGATION_MEAN;
  double scale = 1.0;  // for AGGREGATION_SCALED
};

// Thread-safe. Every mutation happens entirely or not at all.
class ParameterTable {
 public:
  // Pending ROUND pushes one trainer may have by default before further ones are
  // RESOURCE_EXHAUSTED: the backpressure that bounds the store's memory when a round cannot close.
  static constexpr size_t kDefaultMaxPendingPushes = 256;

  // Snapshots kept for round pulls; older ones are dropped (a pull of them is NOT_FOUND). Each
  // trainer may have `max_pending_pushes` (at least 1) ROUND pushes waiting.
  explicit ParameterTable(int snapshots_kept = 8,
                          size_t max_pending_pushes = kDefaultMaxPendingPushes)
      : snapshots_kept_(snapshots_kept), max_pending_pushes_(max_pending_pushes) {}

  std::optional<tensor::TensorSpec> Spec(const std::string& name) const;
  std::vector<tensor::TensorSpec> Specs() const;
  int64_t live_version() const;
  int64_t last_closed_round() const;  // -1 before anything was initialized
  // Changes whenever anything a checkpoint holds changes: the live model, the pending round
  // pushes, or the membership.
  int64_t durable_version() const;

  // Replaces the set of trainers allowed to push. Trainers no longer listed become "departed".
  // `round` is the last round the coordinator closed on every shard: a table behind it (restored
  // from a checkpoint) publishes its live model as that round's snapshot and skips the rounds in
  // between; a table at or past it ignores it. Until the first call, pushes and pulls are
  // UNAVAILABLE: a shard that just (re)started waits for the coordinator to reconcile it.
  // `rule` is how the job applies pushes (the store service always passes the coordinator's);
  // without one the table takes each push's own apply mode and weight (tests of the table alone).
  // `job_end` is how the job ends (Membership.job_end; nullopt: training goes on), kept with the
  // membership, durably, and never interpreted; the caller checks it (CheckJobEnd).
  MembershipResult SetMembers(const std::vector<TrainerKey>& members, int64_t round = 0,
                              std::optional<PushRule> rule = std::nullopt,
                              std::optional<v1::JobEnd> job_end = std::nullopt);

  // Records the name of each trainer id (`names`: id, name; an empty name changes nothing), before
  // SetMembers takes them: under TLS a push is taken only from a certificate naming its trainer.
  // Names are durable (a checkpoint keeps them) and kept for every id ever named (ids are never
  // reused). Returns the ids whose name changed.
  std::vector<Rename> NameMembers(const std::vector<std::pair<uint64_t, std::string>>& names);

  // The name a membership gave `trainer_id` ("" when none has).
  std::string NameOf(uint64_t trainer_id) const;

  // Creates the push's tensors with its values as initial model. Tensors that exist with the same
  // shape are left untouched; a different shape is FAILED_PRECONDITION (and nothing is created).
  // While no round has closed, the round-0 snapshot is (re)published to include new tensors.
  absl::StatusOr<ApplyResult> Initialize(const rpc::StagedPush& push);

  // Loads a checkpointed state into an empty table: its model becomes the live model and the
  // snapshot of its last closed round (round 0 when none had closed), its cuts, sequences, pending
  // round pushes, membership and names the table's (the membership is reported by Members() but
  // serves nothing until the coordinator's first SetMembers reconciles the shard); later Initialize
  // calls with the same tensors find it already initialized. FAILED_PRECONDITION when the table
  // holds tensors already; INVALID_ARGUMENT for a state without a model or with values missing, or
  // with a pending push that does not fit the model or its trainer's clock order (nothing is
  // restored then).
  absl::Status Restore(const DurableState& state);

  // The table's DurableState, taken at one instant (a checkpoint's consistent cut), closing the
  // current checkpoint epoch: pushes taken from now on belong to the next. Copies no values (the
  // live model is shared; pushes meanwhile write copies, ModelSnapshot).
  DurableState Durable();

  // The checkpoint of the cut that closed `epoch` is written: pushes of earlier epochs are safe
  // from a restart (ApplyResult::durable_epoch tells their trainers).
  void Saved(int64_t epoch);

  // Bytes of tensor buffers let go and kept for the next copy on write or round sum
  // (TensorBuffers): at most the model's size.
  size_t kept_buffer_bytes() const { return buffers_.kept_bytes(); }

  // Who may push now (or could, before a restore), in id order, with their last cuts: what a
  // restarted coordinator resumes from.
  Roster Members() const;

  // How many pushes of each trainer this table has taken in (applied, or pending for a round; a
  // re-sent sum counts the pushes it carries), restored ones included, in trainer order: what an
  // audit of exactly once compares with the pushes the trainers saw acknowledged.
  std::vector<std::pair<TrainerKey, int64_t>> Taken() const;

  // Takes a validated delta: IMMEDIATE pushes are added to the model at once; ROUND pushes stay
  // pending until a round's cut reaches their clock (a `resent` one, behind the trainer's cut,
  // goes into the next round). The weight is the job's (PushRule). UNAUTHENTICATED: trainer never
  // a member; FAILED_PRECONDITION: departed trainer, stale incarnation, a ROUND push at or below
  // the trainer's last cut (its round has closed) that is not `resent`, an apply mode the job does
  // not use; INVALID_ARGUMENT: no apply mode, a non-finite weight or a non-positive round weight
  // (without a rule), or a delta that would make the model non-finite (checked against the live
  // model for ROUND pushes too; nothing is taken). A sequence at or below the last accepted one
  // for this (trainer, incarnation) is acknowledged as a duplicate and not taken again.
  absl::StatusOr<ApplyResult> Apply(rpc::StagedPush push);

  // Closes round `request.round`: adds the pending pushes its cuts name, aggregated as requested,
  // to the model and publishes the round snapshot. When the cuts take every pending push and the
  // sum kept as they arrived holds them all (RoundSum), that sum is added instead, in one pass
  // (summed_on_arrival). The model is the same up to float rounding, which then depends on the
  // order the pushes arrived in (after a Restore: the order it re-added them in), where push by
  // push it depends on the cuts' order: a restored shard that closes a round again may differ from
  // the first close in the last bits (as a re-sent sum of pushes may).
  // Pending pushes of trainers neither cut nor members are discarded. A round already closed
  // returns its recorded result (idempotent); one at or below the last closed round with no record
  // (closed before a restore, or skipped) is OK with the round's checksum when its snapshot is kept
  // (else 0) and no pushes. FAILED_PRECONDITION if it is past the next round or nothing was
  // initialized; INVALID_ARGUMENT for a missing aggregation or a non-finite scale (nothing
  // changes); UNAVAILABLE before the first SetMembers.
  absl::StatusOr<CloseResult> CloseRound(const CloseRequest& request);

  // A published round (FAILED_PRECONDITION when not closed yet; when dropped, the newest published
  // round if `newest_if_dropped`, else NOT_FOUND), or the live model (round < 0): no values are
  // copied either way (ModelSnapshot).
  // UNAVAILABLE before the first SetMembers.
  absl::StatusOr<std::shared_ptr<const ModelSnapshot>> Snapshot(
      int64_t round, bool newest_if_dropped = false) const;

 private:
  struct Tensor {
    tensor::TensorSpec spec;
    TensorBuffers::Buffer values;  // shared with snapshots until written
  };
  struct PendingPush {
    int64_t clock = 0;
    std::shared_ptr<const rpc::StagedPush> push;
  };

  absl::Status CheckMember(const v1::PushHeader& header) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Sets the header's weight to the job's (rule_); errors as Apply's for the mode and the weight.
  // Runs after the duplicate check, so a retry is acknowledged as before.
  absl::Status TakeJobsWeight(v1::PushHeader& header) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // INVALID_ARGUMENT when adding the push at `weight` would make a tensor non-finite. Only called
  // when model_bound_ says it might: an element-wise pass over the push and the model.
  absl::Status CheckStaysFinite(const rpc::StagedPush& push, float weight) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether adding `grows` more magnitude to the live model could overflow it (true when either is
  // NaN).
  bool NearTheLimit(double grows) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The largest |value| of the live model (infinity if it holds a non-finite one): one pass.
  double ExactMagnitude() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckReconciled() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int64_t DurableVersionLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const ModelSnapshot> MakeSnapshot(int64_t round) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Lets buffers_ keep as many bytes as the model has: a checkpoint's copies on write, or a round's
  // sums, at most.
  void KeepOneModelOfBuffers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tensor's values to change in place: copied first while a snapshot shares them.
  float* Writable(Tensor& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Publish(std::shared_ptr<const ModelSnapshot> snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Below this bound on |model| + |weight x delta| no element can overflow float (about 3.4e38).
  static constexpr double kSafeMagnitude = 1e38;

  const int snapshots_kept_;
  const size_t max_pending_pushes_;
  // Every tensor buffer the table makes, and takes back once nothing holds it: keeps up to one
  // model's worth (set as tensors are created).
  TensorBuffers buffers_;
  mutable absl::Mutex mu_;
  std::map<std::string, Tensor> tensors_ ABSL_GUARDED_BY(mu_);
  // At least the largest |value| of the live model, up to float rounding (which the margin of
  // kSafeMagnitude, 1e38 against float's 3.4e38, absorbs): grown by |weight| x the largest |value|
  // of every delta applied, so a push far from float's limit needs no element-wise check. Once it
  // is near the limit every push is checked element by element (it never shrinks but at Restore).
  double model_bound_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t live_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_closed_round_ ABSL_GUARDED_BY(mu_) = -1;
  // ROUND pushes not yet taken by a round, in clock order, and each trainer's last cut.
  std::map<TrainerKey, std::deque<PendingPush>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<TrainerKey, int64_t> last_cut_ ABSL_GUARDED_BY(mu_);
  // The weighted sum of pending_, while it holds every pending push (RoundSum).
  RoundSum round_sum_ ABSL_GUARDED_BY(mu_){kSafeMagnitude, buffers_};
  std::deque<std::shared_ptr<const ModelSnapshot>> snapshots_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, CloseResult> close_results_ ABSL_GUARDED_BY(mu_);
  bool membership_received_ ABSL_GUARDED_BY(mu_) = false;  // reconciled since this start
  std::optional<PushRule> rule_ ABSL_GUARDED_BY(mu_);
  bool has_membership_ ABSL_GUARDED_BY(mu_) = false;  // set now or restored
  std::optional<v1::JobEnd> job_end_ ABSL_GUARDED_BY(mu_);
  int64_t membership_changes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t round_pushes_taken_in_ ABSL_GUARDED_BY(mu_) = 0;
  // The open checkpoint epoch: moved by Durable() under the shared lock, read by pushes under the
  // exclusive one, so every push is on one side of a cut.
  std::atomic<int64_t> epoch_{0};
  int64_t durable_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // (trainer id, incarnation) -> the epoch its last applied push went into (none: restored).
  std::map<std::pair<uint64_t, uint64_t>, int64_t> last_epoch_ ABSL_GUARDED_BY(mu_);
  std::map<TrainerKey, int64_t> taken_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, uint64_t> member_incarnation_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> ever_members_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::string> names_ ABSL_GUARDED_BY(mu_);
  // (trainer id, incarnation) -> last applied sequence.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> last_sequence_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_PARAMETER_TABLE_H_
