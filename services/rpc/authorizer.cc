#include "rpc/authorizer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"

namespace syncopate::rpc {

absl::StatusOr<Identity> IdentityOf(const grpc::AuthContext& context,
                                    absl::string_view trust_domain) {
  std::vector<absl::string_view> uris;
  for (const grpc::string_ref& uri : context.FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    uris.emplace_back(uri.data(), uri.size());
  }
  std::string domain;
  absl::StatusOr<Identity> identity = OneIdentity(uris, &domain);
  if (!identity.ok()) {
    return absl::UnauthenticatedError(absl::StrCat("the caller's ", identity.status().message()));
  }
  if (domain != trust_domain) {
    return absl::UnauthenticatedError(absl::StrCat("the caller's certificate is of trust domain ",
                                                   Quoted(domain), ", not ", Quoted(trust_domain)));
  }
  return *identity;
}

Authorizer::Authorizer(const Credentials& server_credentials, OnRefusal on_refusal)
    : Authorizer(server_credentials.secure(), server_credentials.trust_domain(),
                 std::move(on_refusal)) {}

Authorizer::Authorizer(bool enforce, std::string trust_domain, OnRefusal on_refusal)
    : enforce_(enforce),
      trust_domain_(std::move(trust_domain)),
      on_refusal_(std::move(on_refusal)) {}

absl::Status Authorizer::Refuse(absl::string_view rpc, absl::Status status) const {
  if (on_refusal_) on_refusal_(rpc);
  return status;
}

absl::StatusOr<std::optional<Identity>> Authorizer::Require(
    const grpc::ServerContextBase& ctx, absl::string_view rpc,
    std::initializer_list<Role> roles) const {
  if (!enforce_) return std::optional<Identity>();
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) {
    return Refuse(rpc, absl::UnauthenticatedError(
                           absl::StrCat(rpc, " refused: the caller presented no certificate")));
  }
  absl::StatusOr<Identity> caller = IdentityOf(*auth, trust_domain_);
  if (!caller.ok()) {
    return Refuse(rpc, absl::UnauthenticatedError(
                           absl::StrCat(rpc, " refused: ", caller.status().message())));
  }
  if (std::find(roles.begin(), roles.end(), caller->role) == roles.end()) {
    std::vector<std::string> allowed;
    for (Role role : roles) allowed.push_back(RoleName(role));
    return Refuse(rpc, absl::PermissionDeniedError(absl::StrCat(
                           rpc, " refused: the caller is ", caller->ToString(), "; only ",
                           absl::StrJoin(allowed, " or "), " may call it")));
  }
  return std::optional<Identity>(*caller);
}

absl::Status Authorizer::RequireName(const std::optional<Identity>& caller, absl::string_view name,
                                     absl::string_view rpc, absl::string_view what) const {
  if (!enforce_ || !caller || caller->name.empty() || caller->name == name) {
    return absl::OkStatus();
  }
  return Refuse(rpc, absl::PermissionDeniedError(
                         absl::StrCat(rpc, " refused: ", caller->ToString(), " may not send ", what,
                                      ", which belongs to ", Quoted(name))));
}

}  // namespace syncopate::rpc
