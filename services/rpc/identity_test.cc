#include "rpc/identity.h"

#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

TEST(Identity, SpiffeIdRoundTrips) {
  for (const Identity& identity :
       {Identity{Role::kTrainer, "trainer-3"}, Identity{Role::kCoordinator, "coordinator-0"},
        Identity{Role::kStore, "store-1"}, Identity{Role::kOperator, "alice"},
        Identity{Role::kTrainer, ""}}) {
    absl::StatusOr<std::string> id = SpiffeId(kDefaultTrustDomain, identity);
    ASSERT_TRUE(id.ok()) << id.status();
    absl::StatusOr<Identity> parsed = ParseSpiffeId(*id);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, identity) << *id;
  }
  EXPECT_EQ(*SpiffeId("example.org", {Role::kStore, "store-0"}),
            "spiffe://example.org/syncopate/store/store-0");
  EXPECT_EQ(*SpiffeId("example.org", {Role::kTrainer, ""}),
            "spiffe://example.org/syncopate/trainer");
}

TEST(Identity, RefusesWhatIsNotAnIdentity) {
  for (const char* bad : {"", "https://x/syncopate/trainer/a", "spiffe://", "spiffe://td",
                          "spiffe://td/syncopate", "spiffe://td/other/trainer/a",
                          "spiffe://td/syncopate/admin/a", "spiffe://td/syncopate/trainer/a/b",
                          "spiffe://td/syncopate/trainer/a b", "spiffe://TD/syncopate/trainer/a",
                          "spiffe:///syncopate/trainer/a", "spiffe://td/syncopate/trainer/"}) {
    EXPECT_EQ(ParseSpiffeId(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(SpiffeId("Bad Domain", {Role::kStore, "s"}).ok());
  EXPECT_FALSE(SpiffeId("td", {Role::kStore, "a/b"}).ok());
  EXPECT_FALSE(SpiffeId("td", {Role::kStore, std::string(kMaxNameLength + 1, 'a')}).ok());
}

TEST(Identity, RolesAndNames) {
  for (Role role : {Role::kCoordinator, Role::kStore, Role::kTrainer, Role::kOperator}) {
    EXPECT_EQ(*ParseRole(RoleName(role)), role);
  }
  EXPECT_EQ(ParseRole("root").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsValidName("trainer-0.pod_A"));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("a\nb"));
  EXPECT_EQ(Quoted("a\nb"), "'a\\nb'");
  EXPECT_EQ(Quoted(std::string(70, 'x')), "'" + std::string(64, 'x') + "...'");
  EXPECT_EQ((Identity{Role::kTrainer, ""}).ToString(), "trainer (any name)");
}

}  // namespace
}  // namespace syncopate::rpc
