// Who a Syncopate process is, as its certificate says: a role and a name in a SPIFFE-like URI
// subject alternative name, spiffe://<trust domain>/syncopate/<role>/<name> (docs/security.md).
// Servers authorize each call by the caller's identity (authorizer.h); clients check the server's
// role (credentials.h).
#ifndef SYNCOPATE_RPC_IDENTITY_H_
#define SYNCOPATE_RPC_IDENTITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace syncopate::rpc {

enum class Role { kCoordinator, kStore, kTrainer, kOperator };

// "coordinator", "store", "trainer", "operator".
const char* RoleName(Role role);
// INVALID_ARGUMENT for any other word.
absl::StatusOr<Role> ParseRole(absl::string_view name);

// The longest process name: a Kubernetes object name (DNS subdomain) fits.
inline constexpr size_t kMaxNameLength = 253;
// 1 to kMaxNameLength characters out of [A-Za-z0-9._-], not "." or "..": safe in logs, metric
// labels, file names and a SPIFFE path segment.
bool IsValidName(absl::string_view name);
// At most `max_length` printable ASCII characters (space included, no control characters): text
// from a peer that is safe to log verbatim.
bool IsPrintableText(absl::string_view text, size_t max_length);
// `text` escaped for a message, cut to 64 characters, in quotes.
std::string Quoted(absl::string_view text);

inline constexpr char kDefaultTrustDomain[] = "syncopate.local";

struct Identity {
  Role role = Role::kOperator;
  // Empty: a pool certificate, good for any name of its role (Kubernetes trainers sharing one
  // Secret; weaker than a certificate per pod, see docs/security.md).
  std::string name;

  bool operator==(const Identity& other) const { return role == other.role && name == other.name; }
  // "trainer trainer-3", "trainer (any name)".
  std::string ToString() const;
};

// spiffe://<trust_domain>/syncopate/<role>[/<name>]. INVALID_ARGUMENT for a trust domain outside
// [a-z0-9._-] or a name IsValidName refuses.
absl::StatusOr<std::string> SpiffeId(absl::string_view trust_domain, const Identity& identity);
// The identity in such a URI, and its trust domain in `*trust_domain` (may be null).
// INVALID_ARGUMENT, saying why, for anything else.
absl::StatusOr<Identity> ParseSpiffeId(absl::string_view uri, std::string* trust_domain = nullptr);

// The one Syncopate identity among a certificate's URI subject alternative names (others are
// ignored), and its trust domain in `*trust_domain`. INVALID_ARGUMENT when there is none, or more
// than one.
absl::StatusOr<Identity> OneIdentity(const std::vector<absl::string_view>& uris,
                                     std::string* trust_domain);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_IDENTITY_H_
