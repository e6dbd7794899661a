#include "store/store_service.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "rpc/grpc_util.h"
#include "spdlog/spdlog.h"

namespace syncopate::store {

StoreService::StoreService(ParameterTable& table, StoreMetrics& metrics, uint32_t shard,
                           uint32_t shard_count, uint64_t incarnation)
    : table_(table),
      metrics_(metrics),
      shard_(shard),
      shard_count_(shard_count),
      incarnation_(incarnation) {}

grpc::Status StoreService::Finish(const absl::Status& status) {
  if (!status.ok()) {
    metrics_.Reject(status);
    spdlog::debug("rejected: {}", status.ToString());
  }
  return rpc::ToGrpcStatus(status);
}

void StoreService::UpdateGauges() {
  metrics_.live_version.Set(static_cast<double>(table_.live_version()));
  metrics_.last_closed_round.Set(static_cast<double>(table_.last_closed_round()));
}

grpc::Status StoreService::GetSchema(grpc::ServerContext*, const v1::GetSchemaRequest*,
                                     v1::Schema* reply) {
  reply->set_shard(shard_);
  reply->set_shard_count(shard_count_);
  for (const tensor::TensorSpec& spec : table_.Specs()) tensor::ToProto(spec, reply->add_tensors());
  reply->set_live_version(table_.live_version());
  reply->set_last_closed_round(table_.last_closed_round());
  reply->set_incarnation(incarnation_);
  for (const auto& [trainer, pushes] : table_.Taken()) {
    v1::PushCount* count = reply->add_taken();
    count->set_trainer_id(trainer.id);
    count->set_incarnation(trainer.incarnation);
    count->set_pushes(pushes);
  }
  const Roster roster = table_.Members();
  reply->set_has_membership(roster.has_membership);
  for (const RoundCut& m : roster.members) {
    v1::PushCut* member = reply->add_members();
    member->set_trainer_id(m.trainer.id);
    member->set_incarnation(m.trainer.incarnation);
    member->set_clock(m.clock);
  }
  return grpc::Status::OK;
}

absl::Status StoreService::ReceivePush(grpc::ServerReader<v1::PushMessage>* reader, bool initialize,
                                       v1::PushReply* reply) {
  const absl::Time start = absl::Now();
  SpecLookup lookup;
  if (!initialize) lookup = [this](const std::string& name) { return table_.Spec(name); };
  PushAssembler assembler(std::move(lookup));
  v1::PushMessage message;
  while (reader->Read(&message)) {
    RETURN_IF_ERROR(assembler.Add(message));
  }
  ASSIGN_OR_RETURN(StagedPush push, assembler.Finish());
  if (initialize) {
    for (const tensor::TensorSpec& spec : push.tensors) {
      if (tensor::ShardOf(spec.name, shard_count_) != shard_) {
        return absl::InvalidArgumentError("tensor '" + spec.name + "' belongs to another shard");
      }
    }
  }
  if (!initialize && push.header.shard_incarnation() != 0 &&
      push.header.shard_incarnation() != incarnation_) {
    return absl::AbortedError(absl::StrCat(
        "this store shard restarted (incarnation ", incarnation_, ", the push expected ",
        push.header.shard_incarnation(),
        ") and may have lost pushes since its checkpoint: re-send them, then this one"));
  }
  const absl::Time apply_start = absl::Now();
  ASSIGN_OR_RETURN(ApplyResult result,
                   initialize ? table_.Initialize(push) : table_.Apply(std::move(push)));
  metrics_.apply_duration.Observe(absl::ToDoubleSeconds(absl::Now() - apply_start));
  metrics_.push_bytes.Increment(static_cast<double>(push.payload_bytes));
  if (result.duplicate) {
    metrics_.pushes_duplicate.Increment();
  } else if (!initialize) {
    metrics_.pushes_applied.Increment();
  }
  if (initialize && !result.already_initialized) {
    double bytes = 0;
    for (const tensor::TensorSpec& spec : table_.Specs()) bytes += 4.0 * spec.NumElements();
    metrics_.model_bytes.Set(bytes);
  }
  reply->set_live_version(result.live_version);
  reply->set_duplicate(result.duplicate);
  reply->set_already_initialized(result.already_initialized);
  reply->set_incarnation(incarnation_);
  reply->set_epoch(result.epoch);
  reply->set_durable_epoch(result.durable_epoch);
  metrics_.push_duration.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  UpdateGauges();
  return absl::OkStatus();
}

grpc::Status StoreService::Initialize(grpc::ServerContext*,
                                      grpc::ServerReader<v1::PushMessage>* reader,
                                      v1::PushReply* reply) {
  return Finish(ReceivePush(reader, /*initialize=*/true, reply));
}

grpc::Status StoreService::Push(grpc::ServerContext*, grpc::ServerReader<v1::PushMessage>* reader,
                                v1::PushReply* reply) {
  return Finish(ReceivePush(reader, /*initialize=*/false, reply));
}

grpc::Status StoreService::Pull(grpc::ServerContext* ctx, const v1::PullRequest* request,
                                grpc::ServerWriter<v1::PullMessage>* writer) {
  const absl::Time start = absl::Now();
  int64_t round = -1;
  switch (request->selector_case()) {
    case v1::PullRequest::kLive:
      break;
    case v1::PullRequest::kRound:
      if (request->round() < 0) {
        return Finish(absl::InvalidArgumentError("negative round in pull"));
      }
      round = request->round();
      break;
    default:
      return Finish(absl::InvalidArgumentError("pull names neither live nor a round"));
  }
  absl::StatusOr<std::shared_ptr<const ModelSnapshot>> snapshot =
      table_.Snapshot(round, request->newest_if_dropped());
  if (!snapshot.ok()) return Finish(snapshot.status());
  const ModelSnapshot& s = **snapshot;

  v1::PullMessage message;
  v1::PullHeader* header = message.mutable_header();
  header->set_live_version(s.live_version);
  header->set_round(s.round);
  header->set_checksum(s.checksum);
  for (const tensor::TensorSpec& spec : s.specs) tensor::ToProto(spec, header->add_tensors());
  if (!writer->Write(message)) return Finish(absl::CancelledError("pull reader went away"));

  bool ok = true;
  uint64_t bytes = 0;
  for (size_t i = 0; i < s.specs.size() && ok; ++i) {
    tensor::ForEachChunk(s.specs[i].name, s.values[i], request->chunk_bytes(),
                         [&](v1::TensorChunk& chunk) {
                           if (!ok || ctx->IsCancelled()) {
                             ok = false;
                             return;
                           }
                           bytes += chunk.data().size();
                           message.mutable_chunk()->Swap(&chunk);
                           ok = writer->Write(message);
                         });
  }
  if (!ok) return Finish(absl::CancelledError("pull reader went away"));
  metrics_.pull_bytes.Increment(static_cast<double>(bytes));
  metrics_.pull_duration.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  return grpc::Status::OK;
}

grpc::Status StoreService::SetMembership(grpc::ServerContext*, const v1::Membership* request,
                                         v1::SetMembershipReply* reply) {
  std::vector<TrainerKey> members;
  for (const v1::Member& m : request->members()) {
    members.push_back(TrainerKey{m.trainer_id(), m.incarnation()});
  }
  const MembershipResult result = table_.SetMembers(members, request->round());
  if (result.rounds_skipped > 0) {
    spdlog::warn("caught up with the job's round {}: rounds {} to {} are lost on this shard",
                 result.last_closed_round, result.last_closed_round - result.rounds_skipped + 1,
                 result.last_closed_round);
    metrics_.rounds_skipped.Increment(static_cast<double>(result.rounds_skipped));
  }
  reply->set_incarnation(incarnation_);
  reply->set_last_closed_round(result.last_closed_round);
  reply->set_holds_model(result.holds_model);
  reply->set_rounds_skipped(result.rounds_skipped);
  UpdateGauges();
  return grpc::Status::OK;
}

grpc::Status StoreService::CloseRound(grpc::ServerContext*, const v1::CloseRoundRequest* request,
                                      v1::CloseRoundReply* reply) {
  CloseRequest close;
  close.round = request->round();
  close.aggregation = request->aggregation();
  close.scale = request->scale();
  for (const v1::PushCut& cut : request->cuts()) {
    close.cuts.push_back({{cut.trainer_id(), cut.incarnation()}, cut.clock()});
  }
  absl::StatusOr<CloseResult> result = table_.CloseRound(close);
  if (!result.ok()) return Finish(result.status());
  reply->set_live_version(result->live_version);
  reply->set_checksum(result->checksum);
  reply->set_pushes(result->pushes);
  reply->set_incarnation(incarnation_);
  if (!result->already_closed) metrics_.rounds_closed.Increment();
  UpdateGauges();
  return grpc::Status::OK;
}

}  // namespace syncopate::store
