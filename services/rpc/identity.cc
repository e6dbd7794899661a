#include "rpc/identity.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace syncopate::rpc {
namespace {

constexpr absl::string_view kScheme = "spiffe://";
constexpr absl::string_view kPathRoot = "syncopate";

bool NameCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool IsValidTrustDomain(absl::string_view domain) {
  if (domain.empty() || domain.size() > 255) return false;
  for (char c : domain) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kCoordinator:
      return "coordinator";
    case Role::kStore:
      return "store";
    case Role::kTrainer:
      return "trainer";
    case Role::kOperator:
      return "operator";
  }
  return "unknown";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  for (Role role : {Role::kCoordinator, Role::kStore, Role::kTrainer, Role::kOperator}) {
    if (name == RoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role ", Quoted(name), ": coordinator, store, trainer or operator"));
}

bool IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || name == "." || name == "..") return false;
  for (char c : name) {
    if (!NameCharacter(c)) return false;
  }
  return true;
}

bool IsPrintableText(absl::string_view text, size_t max_length) {
  return text.size() <= max_length &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= ' ' && c < 0x7f; });
}

std::string Quoted(absl::string_view text) {
  const bool cut = text.size() > 64;
  return absl::StrCat("'", absl::CHexEscape(text.substr(0, 64)), cut ? "...'" : "'");
}

std::string Identity::ToString() const {
  return name.empty() ? absl::StrCat(RoleName(role), " (any name)")
                      : absl::StrCat(RoleName(role), " ", name);
}

absl::StatusOr<std::string> SpiffeId(absl::string_view trust_domain, const Identity& identity) {
  if (!IsValidTrustDomain(trust_domain)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a trust domain takes only [a-z0-9._-] (1 to 255 characters): ", Quoted(trust_domain)));
  }
  if (!identity.name.empty() && !IsValidName(identity.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a name has 1 to ", kMaxNameLength,
                     " characters out of [A-Za-z0-9._-]: ", Quoted(identity.name)));
  }
  std::string id =
      absl::StrCat(kScheme, trust_domain, "/", kPathRoot, "/", RoleName(identity.role));
  if (!identity.name.empty()) absl::StrAppend(&id, "/", identity.name);
  return id;
}

absl::StatusOr<Identity> ParseSpiffeId(absl::string_view uri, std::string* trust_domain) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a Syncopate identity (spiffe://<trust domain>/syncopate/<role>[/<name>]): ",
        Quoted(uri), ": ", why));
  };
  if (!absl::StartsWith(uri, kScheme)) return refuse("no spiffe:// scheme");
  std::vector<absl::string_view> parts =
      absl::StrSplit(uri.substr(kScheme.size()), absl::MaxSplits('/', 4));
  if (parts.size() < 3 || parts.size() > 4) return refuse("wrong number of path segments");
  if (!IsValidTrustDomain(parts[0])) return refuse("bad trust domain");
  if (parts[1] != kPathRoot) return refuse("the path does not start with /syncopate");
  absl::StatusOr<Role> role = ParseRole(parts[2]);
  if (!role.ok()) return refuse(role.status().message());
  Identity identity{*role, ""};
  if (parts.size() == 4) {
    if (!IsValidName(parts[3])) return refuse("bad name");
    identity.name = std::string(parts[3]);
  }
  if (trust_domain) *trust_domain = std::string(parts[0]);
  return identity;
}

absl::StatusOr<Identity> OneIdentity(const std::vector<absl::string_view>& uris,
                                     std::string* trust_domain) {
  std::optional<Identity> found;
  for (absl::string_view uri : uris) {
    std::string domain;
    absl::StatusOr<Identity> identity = ParseSpiffeId(uri, &domain);
    if (!identity.ok()) continue;
    if (found) {
      return absl::InvalidArgumentError("the certificate names more than one Syncopate identity");
    }
    found = *identity;
    *trust_domain = domain;
  }
  if (!found) {
    return absl::InvalidArgumentError(
        "the certificate names no Syncopate identity "
        "(spiffe://<trust domain>/syncopate/<role>[/<name>] among its URI SANs)");
  }
  return *found;
}

}  // namespace syncopate::rpc
