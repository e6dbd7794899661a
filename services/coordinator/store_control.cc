#include "coordinator/store_control.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/grpc_util.h"

namespace syncopate::coordinator {

GrpcStoreControl::GrpcStoreControl(std::vector<std::string> addresses,
                                   const rpc::Credentials& credentials, absl::Duration timeout)
    : addresses_(std::move(addresses)), timeout_(timeout) {
  for (const std::string& address : addresses_) {
    stubs_.push_back(
        v1::ParameterStore::NewStub(rpc::MakeChannel(address, credentials, rpc::Role::kStore)));
  }
}

absl::Status GrpcStoreControl::OnEveryShard(
    const std::string& what,
    const std::function<grpc::Status(size_t, v1::ParameterStore::Stub&, grpc::ClientContext*)>&
        call) {
  for (size_t i = 0; i < stubs_.size(); ++i) {
    auto ctx = rpc::ContextWithTimeout(timeout_);
    grpc::Status status = call(i, *stubs_[i], ctx.get());
    if (!status.ok()) {
      return absl::Status(
          rpc::FromGrpcStatus(status).code(),
          absl::StrCat(what, " on store ", addresses_[i], ": ", status.error_message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ShardState>> GrpcStoreControl::SetMembership(
    const StoreMembership& membership) {
  v1::Membership request;
  for (const sync::Member& m : membership.members) {
    v1::Member* out = request.add_members();
    out->set_trainer_id(m.id);
    out->set_incarnation(m.incarnation);
    out->set_name(m.name);
  }
  request.set_round(membership.round);
  request.set_apply_mode(membership.apply_mode);
  request.set_immediate_weight(membership.immediate_weight);
  request.set_codec(membership.codec);
  if (membership.job_end) *request.mutable_job_end() = *membership.job_end;
  std::vector<ShardState> shards(stubs_.size());
  RETURN_IF_ERROR(OnEveryShard(
      "SetMembership", [&](size_t i, v1::ParameterStore::Stub& stub, grpc::ClientContext* ctx) {
        v1::SetMembershipReply reply;
        grpc::Status status = stub.SetMembership(ctx, request, &reply);
        shards[i] = {reply.incarnation(),
                     reply.last_closed_round(),
                     reply.holds_model(),
                     reply.rounds_skipped(),
                     false,
                     {},
                     std::nullopt};
        return status;
      }));
  return shards;
}

absl::StatusOr<std::vector<ShardState>> GrpcStoreControl::Probe() {
  std::vector<ShardState> shards(stubs_.size());
  RETURN_IF_ERROR(OnEveryShard(
      "GetSchema", [&](size_t i, v1::ParameterStore::Stub& stub, grpc::ClientContext* ctx) {
        v1::Schema reply;
        grpc::Status status = stub.GetSchema(ctx, v1::GetSchemaRequest(), &reply);
        ShardState& shard = shards[i];
        shard = {reply.incarnation(),
                 reply.last_closed_round(),
                 reply.tensors_size() > 0,
                 0,
                 reply.has_membership(),
                 {},
                 std::nullopt};
        for (const v1::PushCut& m : reply.members()) {
          shard.members.push_back({m.trainer_id(), m.incarnation(), m.clock(), m.name()});
        }
        if (reply.has_job_end()) shard.job_end = reply.job_end();
        return status;
      }));
  return shards;
}

absl::Status GrpcStoreControl::CloseRound(const v1::CloseRoundRequest& request) {
  return OnEveryShard(absl::StrCat("CloseRound(", request.round(), ")"),
                      [&](size_t, v1::ParameterStore::Stub& stub, grpc::ClientContext* ctx) {
                        v1::CloseRoundReply reply;
                        return stub.CloseRound(ctx, request, &reply);
                      });
}

v1::ApplyMode ApplyModeOf(sync::PushMode mode) {
  switch (mode) {
    case sync::PushMode::kRound:
      return v1::APPLY_MODE_ROUND;
    case sync::PushMode::kImmediate:
      return v1::APPLY_MODE_IMMEDIATE;
    case sync::PushMode::kNone:
      break;
  }
  return v1::APPLY_MODE_NONE;
}

}  // namespace syncopate::coordinator
