#include "rpc/authorizer.h"

#include <map>
#include <string>
#include <vector>

#include "grpc/grpc_security_constants.h"
#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

// AuthPropertyIterator's default constructor is protected.
struct NoProperties : grpc::AuthPropertyIterator {};

// An auth context with the given peer URIs (what gRPC's TLS stack puts there from the SAN).
class FakeAuthContext final : public grpc::AuthContext {
 public:
  explicit FakeAuthContext(std::vector<std::string> uris) : uris_(std::move(uris)) {}
  bool IsPeerAuthenticated() const override { return true; }
  std::vector<grpc::string_ref> GetPeerIdentity() const override { return {}; }
  std::string GetPeerIdentityPropertyName() const override { return ""; }
  std::vector<grpc::string_ref> FindPropertyValues(const std::string& name) const override {
    std::vector<grpc::string_ref> values;
    if (name == GRPC_PEER_URI_PROPERTY_NAME) {
      for (const std::string& uri : uris_) values.emplace_back(uri);
    }
    return values;
  }
  grpc::AuthPropertyIterator begin() const override { return NoProperties(); }
  grpc::AuthPropertyIterator end() const override { return NoProperties(); }
  void AddProperty(const std::string&, const grpc::string_ref&) override {}
  bool SetPeerIdentityPropertyName(const std::string&) override { return false; }

 private:
  std::vector<std::string> uris_;
};

TEST(IdentityOf, TakesTheOneSyncopateUri) {
  FakeAuthContext one({"https://example.org/x", "spiffe://td/syncopate/trainer/trainer-1"});
  absl::StatusOr<Identity> identity = IdentityOf(one, "td");
  ASSERT_TRUE(identity.ok()) << identity.status();
  EXPECT_EQ(*identity, (Identity{Role::kTrainer, "trainer-1"}));

  FakeAuthContext none({"spiffe://td/other/trainer/x"});
  EXPECT_EQ(IdentityOf(none, "td").status().code(), absl::StatusCode::kUnauthenticated);
  absl::Status elsewhere = IdentityOf(one, "other.job").status();
  EXPECT_EQ(elsewhere.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(elsewhere.message().find("trust domain 'td'"), std::string::npos) << elsewhere;
  FakeAuthContext two(
      {"spiffe://td/syncopate/trainer/a", "spiffe://td/syncopate/coordinator/coordinator-0"});
  EXPECT_EQ(IdentityOf(two, "td").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(Authorizer, NameMustMatchUnlessPoolOrInsecure) {
  std::map<std::string, int> refused;
  Authorizer enforcing = Authorizer::ForTesting(
      true, "td", [&](absl::string_view rpc) { ++refused[std::string(rpc)]; });
  const std::optional<Identity> alice = Identity{Role::kTrainer, "alice"};
  const std::optional<Identity> pool = Identity{Role::kTrainer, ""};
  EXPECT_TRUE(enforcing.RequireName(alice, "alice", "Push", "a push").ok());
  EXPECT_TRUE(enforcing.RequireName(pool, "bob", "Push", "a push").ok());
  absl::Status status = enforcing.RequireName(alice, "bob", "Push", "a push for trainer 2");
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(status.message().find("trainer alice may not send a push for trainer 2"),
            std::string::npos)
      << status;
  EXPECT_EQ(refused["Push"], 1);

  Authorizer open = Authorizer::ForTesting(
      false, "", [&](absl::string_view rpc) { ++refused[std::string(rpc)]; });
  EXPECT_TRUE(open.RequireName(alice, "bob", "Push", "a push").ok());
  EXPECT_EQ(refused["Push"], 1);
}

}  // namespace
}  // namespace syncopate::rpc
