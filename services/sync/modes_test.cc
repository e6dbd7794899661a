#include "sync/modes.h"

#include <set>
#include <string>

#include "CLI/CLI.hpp"
#include "gtest/gtest.h"
#include "sync/policy_factory.h"
#include "sync/policy_flags.h"

namespace syncopate::sync {
namespace {

TEST(ModeTable, NamesAreUniqueAndEveryModeBuildsItsPolicy) {
  std::set<absl::string_view> names;
  for (const Mode& mode : Modes()) {
    EXPECT_TRUE(names.insert(mode.name).second) << mode.name;
    PolicyOptions options;
    options.mode = std::string(mode.name);
    absl::StatusOr<std::unique_ptr<SyncPolicy>> policy = MakePolicy(options);
    ASSERT_TRUE(policy.ok()) << mode.name << ": " << policy.status();
    EXPECT_EQ((*policy)->name(), mode.name);
    EXPECT_EQ((*policy)->push_mode(), mode.push_mode) << mode.name;
    if (mode.takes_staleness()) {  // DSSP's hard bound is its upper one, s_hi
      EXPECT_EQ((*policy)->staleness_bound(),
                mode.reads("staleness-max") ? options.staleness_max : mode.default_staleness)
          << mode.name;
    }
  }
  EXPECT_EQ(FindMode("bsp"), &Modes()[0]);
  EXPECT_EQ(FindMode("BSP"), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(LookupMode("gossip").status()));
}

TEST(ModeTable, EveryOptionAModeReadsIsDeclared) {
  for (const Mode& mode : Modes()) {
    for (absl::string_view flag : mode.options) {
      EXPECT_NE(FindPolicyOption(flag), nullptr) << mode.name << " reads --" << flag;
    }
    EXPECT_EQ(mode.reads("aggregation"), !mode.peer_to_peer()) << mode.name;
    EXPECT_TRUE(mode.planner.empty() || mode.peer_to_peer()) << mode.name;
  }
}

TEST(PolicyOptionRanges, RefuseAValueOutsideItsDeclaredRangeInEveryMode) {
  PolicyOptions options;
  EXPECT_TRUE(CheckPolicyOptionRanges(options).ok());
  options.groups = 0;
  EXPECT_EQ(CheckPolicyOptionRanges(options).message(), "--groups must be >= 1, got 0");
  options = {};
  options.split_ratio = 1;
  EXPECT_EQ(CheckPolicyOptionRanges(options).message(), "--split-ratio must be > 1, got 1");
  options = {};
  options.eta = 1.5;
  EXPECT_EQ(CheckPolicyOptionRanges(options).message(), "--eta must be > 0 and <= 1, got 1.5");
  options = {};
  options.dssp_rule = "loose";
  EXPECT_EQ(CheckPolicyOptionRanges(options).message(),
            "--dssp-rule: unknown value 'loose' (supported: capped, paper)");
  options = {};
  options.staleness = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(MakePolicy(options).status()));
}

// What `syncopate local` forwards to its coordinator is what the coordinator's flags read back.
TEST(PolicyFlags, ForwardedFlagsParseBackToTheSameOptions) {
  PolicyOptions sent;
  sent.mode = "dssp";
  sent.staleness = 2;
  sent.staleness_max = 9;
  sent.dssp_rule = "paper";
  sent.aggregation = "sum";
  sent.groups = 3;
  sent.split_ratio = 2.5;
  sent.min_receivers_fraction = 0.5;
  sent.eta = 0.6;
  sent.seed = 77;
  std::vector<std::string> args = PolicyFlags(sent);
  CLI::App app;
  PolicyOptions received;
  AddPolicyFlags(&app, &received);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed list
  app.parse(reversed);
  EXPECT_EQ(received.mode, sent.mode);
  for (const PolicyOptionSpec& spec : PolicyOptionSpecs()) {
    EXPECT_EQ(FlagValue(spec, received), FlagValue(spec, sent)) << spec.flag;
  }
  EXPECT_EQ(PolicyFlags(PolicyOptions{})[1], "--staleness-max=15")
      << "an unset staleness is not forwarded: the receiving side takes the mode's default";
}

}  // namespace
}  // namespace syncopate::sync
