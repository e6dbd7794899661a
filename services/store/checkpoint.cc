#include "store/checkpoint.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "syncopate/v1/checkpoint.pb.h"
#include "tensor/tensor.h"

namespace syncopate::store {

std::string CheckpointPath(const std::string& dir, uint32_t shard) {
  return absl::StrCat(dir, "/shard-", shard, ".ckpt");
}

absl::Status WriteCheckpoint(const std::string& path, const ModelSnapshot& model, uint32_t shard,
                             uint32_t shard_count) {
  v1::Checkpoint checkpoint;
  checkpoint.set_shard(shard);
  checkpoint.set_shard_count(shard_count);
  checkpoint.set_live_version(model.live_version);
  uint32_t checksum = 0;
  for (size_t i = 0; i < model.specs.size(); ++i) {
    tensor::ToProto(model.specs[i], checkpoint.add_tensors());
    const std::vector<float>& values = model.values[i];
    checkpoint.add_values(reinterpret_cast<const char*>(values.data()),
                          values.size() * sizeof(float));
    checksum = tensor::Crc32(values, checksum);
  }
  checkpoint.set_checksum(checksum);
  std::string bytes;
  if (!checkpoint.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("cannot serialize the checkpoint for ", path));
  }
  return base::WriteFileAtomically(path, bytes);
}

absl::StatusOr<ModelSnapshot> ReadCheckpoint(const std::string& path, uint32_t shard,
                                             uint32_t shard_count) {
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  v1::Checkpoint checkpoint;
  if (!checkpoint.ParseFromString(*bytes) ||
      checkpoint.tensors_size() != checkpoint.values_size()) {
    return absl::DataLossError(absl::StrCat(path, " is not a readable checkpoint"));
  }
  if (checkpoint.shard() != shard || checkpoint.shard_count() != shard_count) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " belongs to shard ", checkpoint.shard(), " of ", checkpoint.shard_count(),
        ", not shard ", shard, " of ", shard_count, ": remove it to start this layout afresh"));
  }
  ModelSnapshot model;
  model.live_version = checkpoint.live_version();
  uint32_t checksum = 0;
  for (int i = 0; i < checkpoint.tensors_size(); ++i) {
    tensor::TensorSpec spec = tensor::FromProto(checkpoint.tensors(i));
    const std::string& data = checkpoint.values(i);
    if (spec.NumElements() <= 0 ||
        data.size() != static_cast<size_t>(spec.NumElements()) * sizeof(float)) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensor '", spec.name, "' has the wrong number of values"));
    }
    std::vector<float> values(spec.NumElements());
    std::memcpy(values.data(), data.data(), data.size());
    checksum = tensor::Crc32(values, checksum);
    model.specs.push_back(std::move(spec));
    model.values.push_back(std::move(values));
  }
  if (checksum != checkpoint.checksum()) {
    return absl::DataLossError(absl::StrCat(path, ": checksum mismatch"));
  }
  return model;
}

Checkpointer::Checkpointer(ParameterTable& table, StoreMetrics& metrics, const std::string& dir,
                           uint32_t shard, uint32_t shard_count)
    : table_(table),
      metrics_(metrics),
      path_(CheckpointPath(dir, shard)),
      shard_(shard),
      shard_count_(shard_count) {}

absl::Status Checkpointer::RestoreIfPresent() {
  absl::StatusOr<ModelSnapshot> model = ReadCheckpoint(path_, shard_, shard_count_);
  if (absl::IsNotFound(model.status())) return absl::OkStatus();
  if (!model.ok()) return model.status();
  RETURN_IF_ERROR(table_.Restore(*model));
  saved_version_ = model->live_version;
  return absl::OkStatus();
}

absl::Status Checkpointer::SaveIfChanged() {
  absl::StatusOr<std::shared_ptr<const ModelSnapshot>> live = table_.Snapshot(-1);
  if (!live.ok()) return live.status();
  const ModelSnapshot& model = **live;
  if (model.specs.empty() || model.live_version == saved_version_) return absl::OkStatus();
  absl::Status written = WriteCheckpoint(path_, model, shard_, shard_count_);
  if (!written.ok()) {
    metrics_.checkpoint_failures.Increment();
    return written;
  }
  saved_version_ = model.live_version;
  metrics_.checkpoints_written.Increment();
  metrics_.last_checkpoint_time.Set(absl::ToUnixSeconds(absl::Now()));
  return absl::OkStatus();
}

}  // namespace syncopate::store
