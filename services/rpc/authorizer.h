// Who may make a call, decided per call from the caller's certificate (identity.h): the services
// ask before doing anything, so a refused call changes nothing. A server that runs without TLS
// (--insecure) cannot tell callers apart and allows every call.
#ifndef SYNCOPATE_RPC_AUTHORIZER_H_
#define SYNCOPATE_RPC_AUTHORIZER_H_

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "rpc/credentials.h"
#include "rpc/identity.h"

namespace syncopate::rpc {

// The caller's identity in a TLS auth context: the one Syncopate SPIFFE URI among its certificate's
// subject alternative names, in `trust_domain`. UNAUTHENTICATED when there is none, more than one,
// or one of another trust domain.
absl::StatusOr<Identity> IdentityOf(const grpc::AuthContext& context,
                                    absl::string_view trust_domain);

// Every role of a job: for calls any of its processes may make.
inline constexpr std::initializer_list<Role> kAnyRole = {Role::kCoordinator, Role::kStore,
                                                         Role::kTrainer, Role::kOperator};

// Thread-safe (immutable).
class Authorizer {
 public:
  // Runs once per refusal with the method's name ("Push"): the service counts it.
  using OnRefusal = std::function<void(absl::string_view rpc)>;
  // Enforced when the server runs TLS with `server_credentials`: callers must then be of its trust
  // domain.
  Authorizer(const Credentials& server_credentials, OnRefusal on_refusal);
  // For tests of the rules without certificates.
  static Authorizer ForTesting(bool enforce, std::string trust_domain, OnRefusal on_refusal) {
    return Authorizer(enforce, std::move(trust_domain), std::move(on_refusal));
  }

  bool enforced() const { return enforce_; }

  // The caller, when its role is one of `roles`; nullopt when not enforced (anyone may call).
  // UNAUTHENTICATED when the call carries no Syncopate identity; PERMISSION_DENIED naming the
  // method, the caller and the roles allowed otherwise.
  absl::StatusOr<std::optional<Identity>> Require(const grpc::ServerContextBase& ctx,
                                                  absl::string_view rpc,
                                                  std::initializer_list<Role> roles) const;
  // OK when not enforced, or when `caller` may act as trainer `name` (its own name, or any with a
  // pool certificate); else PERMISSION_DENIED naming both, counted. `what` says what was refused
  // ("a push for trainer 3").
  absl::Status RequireName(const std::optional<Identity>& caller, absl::string_view name,
                           absl::string_view rpc, absl::string_view what) const;
  // Counts a refusal of `rpc` that the service decided by a rule of its own, and returns `status`.
  absl::Status Refuse(absl::string_view rpc, absl::Status status) const;

 private:
  Authorizer(bool enforce, std::string trust_domain, OnRefusal on_refusal);

  const bool enforce_;
  const std::string trust_domain_;
  const OnRefusal on_refusal_;
};

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_AUTHORIZER_H_
