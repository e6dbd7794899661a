#include "store/store_service.h"

#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "rpc/chunk_frames.h"
#include "rpc/grpc_util.h"
#include "rpc/push_reactor.h"
#include "spdlog/spdlog.h"
#include "store/pull_frames.h"
#include "store/transfer_reactor.h"

namespace syncopate::store {

StoreService::StoreService(ParameterTable& table, StoreMetrics& metrics, uint32_t shard,
                           uint32_t shard_count, uint64_t incarnation, rpc::Authorizer authorizer,
                           rpc::StreamWatchdog* watchdog, RoundWaiters* waiters)
    : table_(table),
      metrics_(metrics),
      shard_(shard),
      shard_count_(shard_count),
      incarnation_(incarnation),
      authorizer_(std::move(authorizer)),
      watchdog_(watchdog),
      waiters_(waiters) {}

namespace {

using rpc::kAnyRole;
using rpc::Role;

}  // namespace

absl::Status StoreService::CheckPusher(const std::optional<rpc::Identity>& caller,
                                       uint64_t trainer_id, const char* rpc_name) {
  if (!authorizer_.enforced()) return absl::OkStatus();
  const std::string name = table_.NameOf(trainer_id);
  if (name.empty()) {
    // Not named by any membership yet: a member this shard has not heard of (it restarted, or the
    // membership naming it is on its way), or one a restarted coordinator took over from the
    // stores before its trainer resumed (the resume names it). Retried, and never let through
    // unnamed: names are recorded before the table takes a member.
    return absl::UnavailableError(absl::StrCat(rpc_name, " refused for now: trainer id ",
                                               trainer_id,
                                               " has no name in this shard's membership"));
  }
  return authorizer_.RequireName(caller, name, rpc_name,
                                 absl::StrCat("a push for trainer id ", trainer_id));
}

void StoreService::WakeWaitingPulls() {
  if (waiters_ != nullptr) waiters_->Closed(table_.last_closed_round());
}

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

grpc::ServerUnaryReactor* StoreService::GetSchema(grpc::CallbackServerContext* ctx,
                                                  const v1::GetSchemaRequest*, v1::Schema* reply) {
  if (auto caller = authorizer_.Require(*ctx, "GetSchema", kAnyRole); !caller.ok()) {
    return rpc::Answer(ctx, Finish(caller.status()));
  }
  return rpc::Answer(ctx, Schema(reply));
}

grpc::ServerUnaryReactor* StoreService::SetMembership(grpc::CallbackServerContext* ctx,
                                                      const v1::Membership* request,
                                                      v1::SetMembershipReply* reply) {
  if (auto caller = authorizer_.Require(*ctx, "SetMembership", {Role::kCoordinator});
      !caller.ok()) {
    return rpc::Answer(ctx, Finish(caller.status()));
  }
  return rpc::Answer(ctx, ChangeMembership(*request, reply));
}

grpc::ServerUnaryReactor* StoreService::CloseRound(grpc::CallbackServerContext* ctx,
                                                   const v1::CloseRoundRequest* request,
                                                   v1::CloseRoundReply* reply) {
  if (auto caller = authorizer_.Require(*ctx, "CloseRound", {Role::kCoordinator}); !caller.ok()) {
    return rpc::Answer(ctx, Finish(caller.status()));
  }
  return rpc::Answer(ctx, Close(*request, reply));
}

grpc::Status StoreService::Schema(v1::Schema* reply) {
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
    member->set_name(table_.NameOf(m.trainer.id));
  }
  if (roster.job_end) *reply->mutable_job_end() = *roster.job_end;
  return grpc::Status::OK;
}

absl::Status StoreService::TakePush(rpc::StagedPush push, bool initialize, absl::Time start,
                                    v1::PushReply* reply) {
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
  const uint64_t payload_bytes = push.payload_bytes;  // `push` may be moved from below
  const absl::Time apply_start = absl::Now();
  ASSIGN_OR_RETURN(ApplyResult result,
                   initialize ? table_.Initialize(push) : table_.Apply(std::move(push)));
  metrics_.apply_duration.Observe(absl::ToDoubleSeconds(absl::Now() - apply_start));
  metrics_.push_bytes.Increment(static_cast<double>(payload_bytes));
  if (result.duplicate) {
    metrics_.pushes_duplicate.Increment();
  } else if (!initialize) {
    metrics_.pushes_applied.Increment();
  }
  if (initialize && !result.already_initialized) {
    double bytes = 0;
    for (const tensor::TensorSpec& spec : table_.Specs()) bytes += 4.0 * spec.NumElements();
    metrics_.model_bytes.Set(bytes);
    WakeWaitingPulls();  // round 0
  }
  reply->set_live_version(result.live_version);
  reply->set_duplicate(result.duplicate);
  reply->set_already_initialized(result.already_initialized);
  reply->set_incarnation(incarnation_);
  reply->set_epoch(result.epoch);
  reply->set_durable_epoch(result.durable_epoch);
  reply->set_applied_weight(result.weight);
  metrics_.push_duration.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  UpdateGauges();
  return absl::OkStatus();
}

grpc::Status StoreService::TakeStream(absl::StatusOr<rpc::StagedPush> push, bool initialize,
                                      const std::optional<rpc::Identity>& caller, absl::Time start,
                                      grpc::ByteBuffer* response) {
  if (!push.ok()) return Finish(push.status());
  if (absl::Status allowed =
          CheckPusher(caller, push->header.trainer_id(), initialize ? "Initialize" : "Push");
      !allowed.ok()) {
    return Finish(allowed);
  }
  v1::PushReply reply;
  absl::Status taken = TakePush(*std::move(push), initialize, start, &reply);
  if (taken.ok()) *response = rpc::EncodeMessage(reply);
  return Finish(taken);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* StoreService::Initialize(
    grpc::CallbackServerContext* ctx, grpc::ByteBuffer* response) {
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Initialize", {Role::kTrainer});
  if (!caller.ok()) return new rpc::RefusedPush(Finish(caller.status()));
  const absl::Time start = absl::Now();
  return new rpc::PushReactor(
      rpc::SpecLookup(),
      [this, start, caller = *std::move(caller)](absl::StatusOr<rpc::StagedPush> push,
                                                 grpc::ByteBuffer* response) {
        return TakeStream(std::move(push), /*initialize=*/true, caller, start, response);
      },
      response, &metrics_.streams_open, /*pace=*/nullptr, watchdog_, ctx);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* StoreService::Push(grpc::CallbackServerContext* ctx,
                                                              grpc::ByteBuffer* response) {
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Push", {Role::kTrainer});
  if (!caller.ok()) return new rpc::RefusedPush(Finish(caller.status()));
  const absl::Time start = absl::Now();
  return new rpc::PushReactor(
      [this](const std::string& name) { return table_.Spec(name); },
      [this, start, caller = *std::move(caller)](absl::StatusOr<rpc::StagedPush> push,
                                                 grpc::ByteBuffer* response) {
        return TakeStream(std::move(push), /*initialize=*/false, caller, start, response);
      },
      response, &metrics_.streams_open, /*pace=*/nullptr, watchdog_, ctx);
}

namespace {

// Streams one pull, one message in flight at a time; deletes itself when gRPC is done with it.
// `finished` runs once, with the outcome and the payload bytes sent. Serve starts it: at once, on
// the thread that read the request, or, for a pull parked on RoundWaiters, on the thread that
// closed its round or found its wait over (the close's handler, the waiters' sweeper); then gRPC's
// callback threads carry it on.
class PullReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  using Finished = std::function<grpc::Status(const absl::Status&, uint64_t bytes)>;

  // With a `watchdog`, a pull whose reader takes no message for its idle time is cancelled.
  PullReactor(uint32_t chunk_bytes, Finished finished, prometheus::Gauge& open,
              rpc::StreamWatchdog* watchdog, grpc::ServerContextBase* context)
      : chunk_bytes_(chunk_bytes),
        finished_(std::move(finished)),
        open_(open),
        watched_(watchdog, context) {
    open_.Increment();
  }

  // Streams the snapshot, or ends the call with its error. Called once.
  void Serve(absl::StatusOr<std::shared_ptr<const ModelSnapshot>> snapshot) {
    if (!snapshot.ok()) {
      Finish(finished_(snapshot.status(), 0));
      return;
    }
    watched_.Touch();  // the wait is over; the stream's idle time counts from here
    frames_.emplace(*std::move(snapshot), chunk_bytes_);
    WriteNext();
  }
  // May park on `waiters` (under this reactor's address), so that a cancelled call leaves them.
  // Set before parking.
  void MayPark(RoundWaiters* waiters) { waiters_ = waiters; }

  void OnCancel() override {
    // Not withdrawn: it is being served, and its write fails; or it never parked.
    if (waiters_ != nullptr && waiters_->Withdraw(this)) {
      Finish(finished_(absl::CancelledError("the puller went away while it waited"), 0));
    }
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(finished_(absl::CancelledError("pull reader went away"), frames_->bytes()));
      return;
    }
    watched_.Touch();
    WriteNext();
  }
  void OnDone() override {
    open_.Decrement();
    delete this;
  }

 private:
  void WriteNext() {
    if (!frames_->Next(&message_)) {
      Finish(finished_(absl::OkStatus(), frames_->bytes()));
      return;
    }
    StartWrite(&message_);
  }

  const uint32_t chunk_bytes_;
  std::optional<PullFrames> frames_;  // set by Serve
  Finished finished_;
  prometheus::Gauge& open_;
  grpc::ByteBuffer message_;  // in flight until OnWriteDone
  rpc::WatchedStream watched_;
  RoundWaiters* waiters_ = nullptr;  // set before the reactor is returned to gRPC
};

// A pull refused before anything was sent.
using RefusedPull = rpc::Refused<grpc::ServerWriteReactor<grpc::ByteBuffer>>;

}  // namespace

SnapshotOr StoreService::PullSnapshot(const v1::PullRequest& request) {
  switch (request.selector_case()) {
    case v1::PullRequest::kLive:
      return table_.Snapshot(-1, false);
    case v1::PullRequest::kRound:
      if (request.round() < 0) return absl::InvalidArgumentError("negative round in pull");
      return table_.Snapshot(request.round(), request.newest_if_dropped());
    default:
      return absl::InvalidArgumentError("pull names neither live nor a round");
  }
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* StoreService::Pull(grpc::CallbackServerContext* ctx,
                                                               const grpc::ByteBuffer* raw) {
  if (auto caller = authorizer_.Require(*ctx, "Pull", kAnyRole); !caller.ok()) {
    return new RefusedPull(Finish(caller.status()));
  }
  const absl::Time start = absl::Now();
  v1::PullRequest request;
  grpc::ByteBuffer bytes = *raw;  // shares the slices; Deserialize consumes its argument
  if (!grpc::SerializationTraits<v1::PullRequest>::Deserialize(&bytes, &request).ok()) {
    return new RefusedPull(Finish(absl::InvalidArgumentError("unparsable pull request")));
  }
  auto* reactor = new PullReactor(
      request.chunk_bytes(),
      [this, start](const absl::Status& status, uint64_t bytes) {
        if (status.ok()) Pulled(bytes, start);
        return Finish(status);
      },
      metrics_.streams_open, watchdog_, ctx);
  // Answered (UNAVAILABLE, retried) a little before the caller's own deadline would end it.
  const absl::Duration patience =
      absl::FromChrono(ctx->deadline()) - absl::Now() - absl::Milliseconds(500);
  ServePull(
      request, patience, reactor, [this, reactor] { reactor->MayPark(waiters_); },
      [reactor](SnapshotOr snapshot) { reactor->Serve(std::move(snapshot)); });
  return reactor;
}

void StoreService::Pulled(uint64_t bytes, absl::Time start) {
  metrics_.pull_bytes.Increment(static_cast<double>(bytes));
  metrics_.pull_duration.Observe(absl::ToDoubleSeconds(absl::Now() - start));
}

void StoreService::ServePull(const v1::PullRequest& request, absl::Duration patience,
                             RoundWaiters::Ticket ticket, const std::function<void()>& before_park,
                             std::function<void(SnapshotOr)> serve) {
  SnapshotOr snapshot = PullSnapshot(request);
  // A round granted while it closes (pipelined grants): the pull waits for it. (A round pull's
  // only FAILED_PRECONDITION is a round not closed yet: ParameterTable::Snapshot.)
  if (waiters_ != nullptr && request.selector_case() == v1::PullRequest::kRound &&
      absl::IsFailedPrecondition(snapshot.status())) {
    before_park();
    absl::StatusOr<bool> parked = waiters_->Park(
        ticket, request.round(), patience, [this] { return table_.last_closed_round(); },
        [this, serve, request](const absl::Status& woken) {
          serve(woken.ok() ? PullSnapshot(request) : SnapshotOr(woken));
        });
    if (!parked.ok()) {
      snapshot = parked.status();
    } else if (*parked) {
      metrics_.pulls_parked.Increment();
      return;
    } else {
      snapshot = PullSnapshot(request);  // closed in the meantime
    }
  }
  serve(std::move(snapshot));
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StoreService::Transfer(
    grpc::CallbackServerContext* ctx) {
  // Any process of the job may pull; each push is the caller's own trainer's (take_push).
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Transfer", kAnyRole);
  if (!caller.ok()) {
    return new rpc::Refused<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>(
        Finish(caller.status()));
  }
  TransferCalls calls;
  calls.lookup = [this](const std::string& name) { return table_.Spec(name); };
  calls.may_push = [this, caller = *caller](uint64_t trainer_id) -> absl::Status {
    if (caller && caller->role != Role::kTrainer) {
      return authorizer_.Refuse(
          "Transfer", absl::PermissionDeniedError(absl::StrCat(
                          "Transfer refused: ", caller->ToString(), " may pull but not push")));
    }
    return CheckPusher(caller, trainer_id, "Transfer");
  };
  calls.take_push = [this, caller = *std::move(caller)](
                        absl::StatusOr<rpc::StagedPush> push,
                        absl::Time start) -> absl::StatusOr<v1::PushReply> {
    if (!push.ok()) return push.status();
    // Again at the end, as a Push call checks it: the membership may have changed meanwhile.
    RETURN_IF_ERROR(CheckPusher(caller, push->header.trainer_id(), "Transfer"));
    v1::PushReply reply;
    RETURN_IF_ERROR(TakePush(*std::move(push), /*initialize=*/false, start, &reply));
    return reply;
  };
  calls.start_pull = [this](const v1::PullRequest& request, const void* ticket,
                            std::function<void(SnapshotOr)> serve) {
    // The stream has no deadline of its own: the trainer says how long it waits (max_wait_ms),
    // and the waiters' longest wait bounds that.
    const absl::Duration patience = request.max_wait_ms() > 0
                                        ? absl::Milliseconds(request.max_wait_ms())
                                        : absl::InfiniteDuration();
    ServePull(
        request, patience, ticket, [] {}, std::move(serve));
  };
  calls.withdraw_pull = [this](const void* ticket) {
    return waiters_ != nullptr && waiters_->Withdraw(ticket);
  };
  calls.pulled = [this](uint64_t bytes, absl::Time start) { Pulled(bytes, start); };
  calls.finish = [this](const absl::Status& status) { return Finish(status); };
  return new TransferReactor(std::move(calls), metrics_.streams_open, watchdog_, ctx);
}

grpc::Status StoreService::ChangeMembership(const v1::Membership& request,
                                            v1::SetMembershipReply* reply) {
  const float weight = request.immediate_weight();
  if (request.apply_mode() == v1::APPLY_MODE_UNSPECIFIED) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a membership states the job's apply mode (NONE in peer-to-peer modes): "
                        "is the coordinator older than this store?");
  }
  if (request.apply_mode() == v1::APPLY_MODE_IMMEDIATE && !(weight > 0 && weight <= 1)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("an immediate push weight must be in (0, 1], got ", weight));
  }
  if (!v1::Codec_IsValid(request.codec())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("unknown codec ", request.codec()));
  }
  if (request.has_job_end()) {
    if (absl::Status s = CheckJobEnd(request.job_end()); !s.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
    }
  }
  std::vector<TrainerKey> members;
  std::vector<std::pair<uint64_t, std::string>> names;
  for (const v1::Member& m : request.members()) {
    // A name the coordinator never gives would also make this shard's checkpoints unreadable.
    if (!m.name().empty() && !rpc::IsValidName(m.name())) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("trainer id ", m.trainer_id(), " is named ",
                                       rpc::Quoted(m.name()), ", not a valid name"));
    }
    members.push_back(TrainerKey{m.trainer_id(), m.incarnation()});
    names.emplace_back(m.trainer_id(), m.name());
  }
  // Before the table takes the members, so that no member's push is ever let through unnamed.
  for (const Rename& rename : table_.NameMembers(names)) {
    spdlog::warn("the membership renames trainer id {} from {} to {}", rename.trainer_id,
                 rpc::Quoted(rename.from), rpc::Quoted(rename.to));
  }
  const MembershipResult result = table_.SetMembers(
      members, request.round(), PushRule{request.apply_mode(), weight, request.codec()},
      request.has_job_end() ? std::optional<v1::JobEnd>(request.job_end()) : std::nullopt);
  if (result.rounds_skipped > 0) {
    spdlog::warn("caught up with the job's round {}: rounds {} to {} are lost on this shard",
                 result.last_closed_round, result.last_closed_round - result.rounds_skipped + 1,
                 result.last_closed_round);
    metrics_.rounds_skipped.Increment(static_cast<double>(result.rounds_skipped));
  }
  WakeWaitingPulls();
  reply->set_incarnation(incarnation_);
  reply->set_last_closed_round(result.last_closed_round);
  reply->set_holds_model(result.holds_model);
  reply->set_rounds_skipped(result.rounds_skipped);
  UpdateGauges();
  return grpc::Status::OK;
}

grpc::Status StoreService::Close(const v1::CloseRoundRequest& request, v1::CloseRoundReply* reply) {
  CloseRequest close;
  close.round = request.round();
  close.aggregation = request.aggregation();
  close.scale = request.scale();
  for (const v1::PushCut& cut : request.cuts()) {
    close.cuts.push_back({{cut.trainer_id(), cut.incarnation()}, cut.clock()});
  }
  absl::StatusOr<CloseResult> result = table_.CloseRound(close);
  if (!result.ok()) return Finish(result.status());
  // The waiting pulls first, then the reply: the trainers' pulls are the round's critical path.
  WakeWaitingPulls();
  reply->set_live_version(result->live_version);
  reply->set_checksum(result->checksum);
  reply->set_pushes(result->pushes);
  reply->set_incarnation(incarnation_);
  if (!result->already_closed) {
    metrics_.rounds_closed.Increment();
    if (result->summed_on_arrival) metrics_.rounds_summed_on_arrival.Increment();
  }
  UpdateGauges();
  return grpc::Status::OK;
}

}  // namespace syncopate::store
