#include "coordinator/store_control.h"

#include "absl/strings/str_cat.h"
#include "rpc/grpc_util.h"

namespace syncopate::coordinator {

GrpcStoreControl::GrpcStoreControl(std::vector<std::string> addresses, absl::Duration timeout)
    : addresses_(std::move(addresses)), timeout_(timeout) {
  for (const std::string& address : addresses_) {
    stubs_.push_back(v1::ParameterStore::NewStub(rpc::MakeChannel(address)));
  }
}

absl::StatusOr<std::vector<ShardState>> GrpcStoreControl::SetMembership(
    const std::vector<sync::Member>& members, int64_t round) {
  v1::Membership request;
  for (const sync::Member& m : members) {
    v1::Member* out = request.add_members();
    out->set_trainer_id(m.id);
    out->set_incarnation(m.incarnation);
  }
  request.set_round(round);
  std::vector<ShardState> shards;
  for (size_t i = 0; i < stubs_.size(); ++i) {
    v1::SetMembershipReply reply;
    auto ctx = rpc::ContextWithTimeout(timeout_);
    grpc::Status status = stubs_[i]->SetMembership(ctx.get(), request, &reply);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("SetMembership on store ", addresses_[i], ": ", status.error_message()));
    }
    shards.push_back({reply.incarnation(), reply.last_closed_round(), reply.holds_model(),
                      reply.rounds_skipped()});
  }
  return shards;
}

absl::StatusOr<std::vector<ShardState>> GrpcStoreControl::Probe() {
  std::vector<ShardState> shards;
  for (size_t i = 0; i < stubs_.size(); ++i) {
    v1::Schema reply;
    auto ctx = rpc::ContextWithTimeout(timeout_);
    grpc::Status status = stubs_[i]->GetSchema(ctx.get(), v1::GetSchemaRequest(), &reply);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("GetSchema on store ", addresses_[i], ": ", status.error_message()));
    }
    shards.push_back({reply.incarnation(), reply.last_closed_round(), reply.tensors_size() > 0, 0});
  }
  return shards;
}

absl::Status GrpcStoreControl::CloseRound(const v1::CloseRoundRequest& request) {
  for (size_t i = 0; i < stubs_.size(); ++i) {
    v1::CloseRoundReply reply;
    auto ctx = rpc::ContextWithTimeout(timeout_);
    grpc::Status status = stubs_[i]->CloseRound(ctx.get(), request, &reply);
    if (!status.ok()) {
      return absl::Status(rpc::FromGrpcStatus(status).code(),
                          absl::StrCat("CloseRound(", request.round(), ") on store ", addresses_[i],
                                       ": ", status.error_message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace syncopate::coordinator
