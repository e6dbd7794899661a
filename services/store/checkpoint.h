// Checkpoints of one store shard's state (ParameterTable::Durable: model, rounds, cuts, applied
// sequences, pending round pushes, membership): written periodically and at shutdown, restored at
// start, so a shard restarted mid-job (or a job restarted with the same shard layout) resumes from
// the last checkpoint. What changed since, trainers re-send (docs/faults.md).
#ifndef SYNCOPATE_STORE_CHECKPOINT_H_
#define SYNCOPATE_STORE_CHECKPOINT_H_

#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"

namespace syncopate::store {

// Where shard `shard`'s checkpoint lives in `dir`.
std::string CheckpointPath(const std::string& dir, uint32_t shard);

// A shard's state as a checkpoint holds it, and when it was written.
struct ShardCheckpoint {
  DurableState state;
  absl::Time written;
};

// Writes `checkpoint` (state from ParameterTable::Durable) to `path` atomically and durably: a
// reader or a restart never sees a partial file, and the file is on disk when this returns. The
// values go to the file straight from the model, each tensor let go once written (while a cut
// holds a table's tensor, each push to it copies it: ModelSnapshot), so a checkpoint allocates no
// copy of the model and holds each tensor only for the time it takes to write it.
absl::Status WriteCheckpoint(const std::string& path, ShardCheckpoint checkpoint, uint32_t shard,
                             uint32_t shard_count);

// The bytes of `checkpoint`'s file, piece by piece through `write` (which stops it with an error),
// as WriteCheckpoint writes them: a serialized v1::Checkpoint of everything but the pending pushes
// and the tensors' values, then each pending push and each tensor's values as the same message's
// next `pending` and `values` fields, then the checksum (SealCheckpoint). Lets each push and each
// tensor go once `write` has taken it. INVALID_ARGUMENT without a model; RESOURCE_EXHAUSTED for a
// file past 2 GiB, which protobuf could not read back (before anything is written when the model
// alone passes it).
absl::Status StreamCheckpoint(ShardCheckpoint checkpoint, uint32_t shard, uint32_t shard_count,
                              absl::FunctionRef<absl::Status(absl::string_view)> write);

// The bytes of `checkpoint`'s file, in one string (StreamCheckpoint).
absl::StatusOr<std::string> EncodeCheckpoint(const ShardCheckpoint& checkpoint, uint32_t shard,
                                             uint32_t shard_count);

// The bytes of a checkpoint file: `body`, a serialized v1::Checkpoint without its checksum, with
// the checksum of those bytes appended (WriteCheckpoint; tests and fuzzers that make their own).
std::string SealCheckpoint(std::string body);

// Reads the bytes of a checkpoint file written for the same shard layout; `source` names them in
// errors. DATA_LOSS and FAILED_PRECONDITION as ReadCheckpoint.
absl::StatusOr<ShardCheckpoint> ParseCheckpoint(absl::string_view bytes, const std::string& source,
                                                uint32_t shard, uint32_t shard_count);

// Reads a checkpoint written for the same shard layout. NOT_FOUND when there is none;
// DATA_LOSS when it is truncated, its checksum does not match, or its model names a tensor twice
// or is not finite;
// FAILED_PRECONDITION when it was written by another shard or for another shard count.
absl::StatusOr<ShardCheckpoint> ReadCheckpoint(const std::string& path, uint32_t shard,
                                               uint32_t shard_count);

// Keeps one shard's checkpoint in a directory. Not thread-safe: one caller (the store's main loop).
class Checkpointer {
 public:
  Checkpointer(ParameterTable& table, StoreMetrics& metrics, const std::string& dir, uint32_t shard,
               uint32_t shard_count);

  // Restores the checkpoint into the (empty) table when there is one, and returns when it was
  // written; nullopt when there is none. Any other error (corrupt, another shard layout) must stop
  // the shard: starting afresh would silently discard the trained model.
  absl::StatusOr<std::optional<absl::Time>> RestoreIfPresent();

  // Writes a checkpoint when the live model or the membership changed since the last one written
  // or restored.
  absl::Status SaveIfChanged();

  const std::string& path() const { return path_; }

 private:
  ParameterTable& table_;
  StoreMetrics& metrics_;
  const std::string path_;
  const uint32_t shard_;
  const uint32_t shard_count_;
  int64_t saved_version_ = 0;  // durable version of the last checkpoint written or restored
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_CHECKPOINT_H_
