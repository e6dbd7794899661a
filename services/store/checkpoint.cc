#include "store/checkpoint.h"

#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "rpc/identity.h"
#include "syncopate/v1/checkpoint.pb.h"
#include "tensor/tensor.h"

namespace syncopate::store {
namespace {

// The checksum goes last, as a serialized message of its own: protobuf merges concatenated
// messages, so the file parses as one Checkpoint, and the checksum covers every byte before it.
std::string ChecksumField(uint32_t checksum) {
  v1::Checkpoint only;
  only.set_checksum(checksum);
  return only.SerializeAsString();
}

// One length-delimited field of a v1::Checkpoint (`values`, `pending`) as it goes on the wire
// after the message's other fields: its key and length, for `bytes` to follow. Protobuf reads it
// as the message's own, and a repeated field's elements in the order they come.
std::string FieldPrefix(uint32_t field_number, size_t bytes) {
  using google::protobuf::io::CodedOutputStream;
  constexpr uint32_t kLengthDelimited = 2;  // the wire type of bytes and messages
  uint8_t prefix[16];
  uint8_t* end =
      CodedOutputStream::WriteVarint32ToArray((field_number << 3) | kLengthDelimited, prefix);
  end = CodedOutputStream::WriteVarint64ToArray(bytes, end);
  return std::string(reinterpret_cast<const char*>(prefix), static_cast<size_t>(end - prefix));
}

}  // namespace

std::string CheckpointPath(const std::string& dir, uint32_t shard) {
  return absl::StrCat(dir, "/shard-", shard, ".ckpt");
}

absl::Status WriteCheckpoint(const std::string& path, ShardCheckpoint checkpoint, uint32_t shard,
                             uint32_t shard_count) {
  auto in_path = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  };
  ASSIGN_OR_RETURN(
      std::unique_ptr<base::AtomicFileWriter> file,
      base::AtomicFileWriter::Open(path, base::AtomicFileWriter::Mode::kDirectDurable));
  absl::Status streamed =
      StreamCheckpoint(std::move(checkpoint), shard, shard_count,
                       [&](absl::string_view bytes) { return file->Append(bytes); });
  if (!streamed.ok()) return in_path(streamed);
  return file->Commit();
}

absl::Status StreamCheckpoint(ShardCheckpoint checkpoint, uint32_t shard, uint32_t shard_count,
                              absl::FunctionRef<absl::Status(absl::string_view)> write) {
  DurableState& state = checkpoint.state;
  if (!state.model) return absl::InvalidArgumentError("a checkpoint needs a model");
  // Everything but the pending pushes and the values, first; those follow field by field.
  v1::Checkpoint head;
  head.set_shard(shard);
  head.set_shard_count(shard_count);
  head.set_live_version(state.model->live_version);
  for (const tensor::TensorSpec& spec : state.model->specs)
    tensor::ToProto(spec, head.add_tensors());
  head.set_last_closed_round(state.last_closed_round);
  for (const RoundCut& cut : state.cuts) {
    v1::PushCut* c = head.add_cuts();
    c->set_trainer_id(cut.trainer.id);
    c->set_incarnation(cut.trainer.incarnation);
    c->set_clock(cut.clock);
  }
  for (const auto& [trainer, sequence] : state.sequences) {
    v1::AppliedSequence* a = head.add_sequences();
    a->set_trainer_id(trainer.id);
    a->set_incarnation(trainer.incarnation);
    a->set_sequence(sequence);
  }
  for (const auto& [trainer, pushes] : state.taken) {
    v1::PushCount* count = head.add_taken();
    count->set_trainer_id(trainer.id);
    count->set_incarnation(trainer.incarnation);
    count->set_pushes(pushes);
  }
  head.set_has_membership(state.has_membership);
  for (const TrainerKey& m : state.members) {
    v1::Member* member = head.add_members();
    member->set_trainer_id(m.id);
    member->set_incarnation(m.incarnation);
  }
  for (const auto& [id, name] : state.names) {
    v1::TrainerName* named = head.add_names();
    named->set_trainer_id(id);
    named->set_name(name);
  }
  if (state.job_end) *head.mutable_job_end() = *state.job_end;
  head.set_written_unix_seconds(absl::ToDoubleSeconds(checkpoint.written - absl::UnixEpoch()));
  std::string bytes;
  if (!head.SerializeToString(&bytes))
    return absl::InternalError("cannot serialize the checkpoint");
  head.Clear();

  // Protobuf reads at most 2 GiB (ParseCheckpoint): a larger file would be written and then fail
  // every restart, so it is refused, before anything is written where its size is known then.
  constexpr size_t kMaxBytes = std::numeric_limits<int>::max();
  const absl::Status too_large = absl::ResourceExhaustedError(
      "a shard's checkpoint cannot pass 2 GiB (protobuf could not read it back): spread the model "
      "over more store shards");
  size_t model_bytes = 0;
  for (const auto& values : state.model->values) model_bytes += values->size() * sizeof(float);
  if (bytes.size() + model_bytes > kMaxBytes) return too_large;
  size_t total = 0;
  uint32_t checksum = 0;
  auto emit = [&](absl::string_view piece) -> absl::Status {
    total += piece.size();
    if (total > kMaxBytes) return too_large;
    checksum = tensor::Crc32(piece, checksum);
    return write(piece);
  };
  auto write_field = [&](uint32_t field_number, absl::string_view value) -> absl::Status {
    RETURN_IF_ERROR(emit(FieldPrefix(field_number, value.size())));
    return emit(value);
  };
  RETURN_IF_ERROR(emit(bytes));

  // Each pending push, one at a time (a round's pushes may weigh as much as the model).
  for (std::shared_ptr<const rpc::StagedPush>& push : state.pending) {
    v1::PendingPush pending;
    *pending.mutable_header() = push->header;
    for (const tensor::TensorSpec& spec : push->tensors) {
      tensor::ToProto(spec, pending.mutable_header()->add_tensors());
    }
    for (const rpc::StagedChunk& chunk : push->chunks) {
      v1::TensorChunk* c = pending.add_chunks();
      c->set_tensor(push->tensors[chunk.tensor_index].name);
      c->set_offset(chunk.offset);
      chunk.AppendPayloadTo(c->mutable_data());
    }
    push.reset();
    bytes.clear();
    if (!pending.SerializeToString(&bytes)) {
      return absl::InternalError("cannot serialize a pending push");
    }
    RETURN_IF_ERROR(write_field(v1::Checkpoint::kPendingFieldNumber, bytes));
  }
  state.pending.clear();

  // Each tensor's values go straight from the model to `write`, and are let go once written.
  std::vector<std::shared_ptr<const std::vector<float>>> values = state.model->values;
  state.model.reset();
  for (std::shared_ptr<const std::vector<float>>& tensor : values) {
    RETURN_IF_ERROR(write_field(v1::Checkpoint::kValuesFieldNumber,
                                absl::string_view(reinterpret_cast<const char*>(tensor->data()),
                                                  tensor->size() * sizeof(float))));
    tensor.reset();
  }
  return write(ChecksumField(checksum));
}

absl::StatusOr<std::string> EncodeCheckpoint(const ShardCheckpoint& checkpoint, uint32_t shard,
                                             uint32_t shard_count) {
  std::string bytes;
  RETURN_IF_ERROR(StreamCheckpoint(checkpoint, shard, shard_count, [&](absl::string_view piece) {
    bytes.append(piece.data(), piece.size());
    return absl::OkStatus();
  }));
  return bytes;
}

std::string SealCheckpoint(std::string body) {
  body += ChecksumField(tensor::Crc32(absl::string_view(body)));
  return body;
}

absl::StatusOr<ShardCheckpoint> ReadCheckpoint(const std::string& path, uint32_t shard,
                                               uint32_t shard_count) {
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseCheckpoint(*bytes, path, shard, shard_count);
}

absl::StatusOr<ShardCheckpoint> ParseCheckpoint(absl::string_view bytes, const std::string& path,
                                                uint32_t shard, uint32_t shard_count) {
  v1::Checkpoint checkpoint;
  // Protobuf reads at most 2 GiB (StreamCheckpoint writes no more).
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !checkpoint.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      checkpoint.tensors_size() != checkpoint.values_size()) {
    return absl::DataLossError(absl::StrCat(path, " is not a readable checkpoint"));
  }
  const std::string tail = ChecksumField(checkpoint.checksum());
  if (!absl::EndsWith(bytes, tail) ||
      tensor::Crc32(bytes.substr(0, bytes.size() - tail.size())) != checkpoint.checksum()) {
    return absl::DataLossError(absl::StrCat(path, ": checksum mismatch"));
  }
  if (checkpoint.shard() != shard || checkpoint.shard_count() != shard_count) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " belongs to shard ", checkpoint.shard(), " of ", checkpoint.shard_count(),
        ", not shard ", shard, " of ", shard_count, ": remove it to start this layout afresh"));
  }
  auto model = std::make_shared<ModelSnapshot>();
  model->live_version = checkpoint.live_version();
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < checkpoint.tensors_size(); ++i) {
    tensor::TensorSpec spec = tensor::FromProto(checkpoint.tensors(i));
    if (absl::Status valid = tensor::ValidateSpec(spec); !valid.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": ", valid.message()));
    }
    if (!names.insert(spec.name).second) {
      return absl::DataLossError(absl::StrCat(path, ": tensor '", spec.name, "' comes twice"));
    }
    const std::string& data = checkpoint.values(i);
    if (spec.NumElements() <= 0 ||
        data.size() != static_cast<size_t>(spec.NumElements()) * sizeof(float)) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensor '", spec.name, "' has the wrong number of values"));
    }
    std::vector<float> values(spec.NumElements());
    std::memcpy(values.data(), data.data(), data.size());
    // The store keeps its model finite (every push is checked); a file that is not came from
    // somewhere else, and would poison every trainer that pulls it.
    if (absl::Status finite = tensor::CheckFinite(values); !finite.ok()) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensor '", spec.name, "': ", finite.message()));
    }
    model->specs.push_back(std::move(spec));
    model->values.push_back(std::make_shared<const std::vector<float>>(std::move(values)));
  }
  ShardCheckpoint out;
  out.state.model = std::move(model);
  out.state.last_closed_round = checkpoint.last_closed_round();
  for (const v1::PushCut& cut : checkpoint.cuts()) {
    out.state.cuts.push_back({{cut.trainer_id(), cut.incarnation()}, cut.clock()});
  }
  for (const v1::AppliedSequence& a : checkpoint.sequences()) {
    out.state.sequences.push_back({{a.trainer_id(), a.incarnation()}, a.sequence()});
  }
  // Pending pushes are checked as a push stream is, against the checkpoint's own tensors.
  absl::flat_hash_map<std::string, const tensor::TensorSpec*> specs;
  for (const tensor::TensorSpec& spec : out.state.model->specs) specs[spec.name] = &spec;
  rpc::SpecLookup lookup = [&](const std::string& name) -> std::optional<tensor::TensorSpec> {
    auto it = specs.find(name);
    if (it == specs.end()) return std::nullopt;
    return *it->second;
  };
  for (v1::PendingPush& pending : *checkpoint.mutable_pending()) {
    rpc::PushAssembler assembler(lookup);
    v1::PushMessage message;
    *message.mutable_header() = std::move(*pending.mutable_header());
    absl::Status added = assembler.Add(message);
    for (v1::TensorChunk& chunk : *pending.mutable_chunks()) {
      if (!added.ok()) break;
      *message.mutable_chunk() = std::move(chunk);
      added = assembler.Add(message);
    }
    absl::StatusOr<rpc::StagedPush> push =
        added.ok() ? assembler.Finish() : absl::StatusOr<rpc::StagedPush>(added);
    if (!push.ok()) {
      return absl::DataLossError(
          absl::StrCat(path, ": a pending push is not whole: ", push.status().message()));
    }
    out.state.pending.push_back(std::make_shared<const rpc::StagedPush>(*std::move(push)));
  }
  for (const v1::PushCount& count : checkpoint.taken()) {
    out.state.taken.push_back({{count.trainer_id(), count.incarnation()}, count.pushes()});
  }
  out.state.has_membership = checkpoint.has_membership();
  for (const v1::Member& m : checkpoint.members()) {
    out.state.members.push_back({m.trainer_id(), m.incarnation()});
  }
  absl::flat_hash_set<uint64_t> named;
  for (const v1::TrainerName& n : checkpoint.names()) {
    // The coordinator names trainers only by valid names, each id once.
    if (!rpc::IsValidName(n.name()) || !named.insert(n.trainer_id()).second) {
      return absl::DataLossError(absl::StrCat(path, ": trainer id ", n.trainer_id(),
                                              " is named twice, or as ", rpc::Quoted(n.name())));
    }
    out.state.names.push_back({n.trainer_id(), n.name()});
  }
  if (checkpoint.has_job_end()) {
    if (absl::Status s = CheckJobEnd(checkpoint.job_end()); !s.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": ", s.message()));
    }
    out.state.job_end = checkpoint.job_end();
  }
  out.written = absl::UnixEpoch() + absl::Seconds(checkpoint.written_unix_seconds());
  return out;
}

Checkpointer::Checkpointer(ParameterTable& table, StoreMetrics& metrics, const std::string& dir,
                           uint32_t shard, uint32_t shard_count)
    : table_(table),
      metrics_(metrics),
      path_(CheckpointPath(dir, shard)),
      shard_(shard),
      shard_count_(shard_count) {}

absl::StatusOr<std::optional<absl::Time>> Checkpointer::RestoreIfPresent() {
  absl::StatusOr<ShardCheckpoint> checkpoint = ReadCheckpoint(path_, shard_, shard_count_);
  if (absl::IsNotFound(checkpoint.status())) return std::optional<absl::Time>();
  if (!checkpoint.ok()) return checkpoint.status();
  RETURN_IF_ERROR(table_.Restore(checkpoint->state));
  saved_version_ = table_.durable_version();
  return std::optional<absl::Time>(checkpoint->written);
}

absl::Status Checkpointer::SaveIfChanged() {
  // Unchanged: no need to take a cut.
  if (table_.durable_version() == saved_version_) return absl::OkStatus();
  ShardCheckpoint checkpoint{table_.Durable(), absl::Now()};
  if (checkpoint.state.model->specs.empty() || checkpoint.state.version == saved_version_) {
    return absl::OkStatus();
  }
  const int64_t version = checkpoint.state.version;
  const int64_t epoch = checkpoint.state.epoch;
  absl::Status written = WriteCheckpoint(path_, std::move(checkpoint), shard_, shard_count_);
  if (!written.ok()) {
    metrics_.checkpoint_failures.Increment();
    return written;
  }
  saved_version_ = version;
  table_.Saved(epoch);
  metrics_.checkpoints_written.Increment();
  metrics_.last_checkpoint_time.Set(absl::ToUnixSeconds(absl::Now()));
  return absl::OkStatus();
}

}  // namespace syncopate::store
