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

absl::Status GrpcStoreControl::SetMembership(const std::vector<sync::Member>& members) {
  v1::Membership request;
  for (const sync::Member& m : members) {
    v1::Member* out = request.add_members();
    out->set_trainer_id(m.id);
    out->set_incarnation(m.incarnation);
  }
  for (size_t i = 0; i < stubs_.size(); ++i) {
    v1::SetMembershipReply reply;
    auto ctx = rpc::ContextWithTimeout(timeout_);
    grpc::Status status = stubs_[i]->SetMembership(ctx.get(), request, &reply);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("SetMembership on store ", addresses_[i], ": ", status.error_message()));
    }
  }
  return absl::OkStatus();
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
