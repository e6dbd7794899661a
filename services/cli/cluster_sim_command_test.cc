#include "cli/cluster_sim_command.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace syncopate::cli {
namespace {

ClusterSimCommand Small(std::vector<std::string> modes) {
  ClusterSimCommand c;
  c.modes = std::move(modes);
  c.sim.trainers = 6;
  c.sim.clocks = 20;
  return c;
}

TEST(ClusterSimCommandTest, OneRowPerModeInOrder) {
  absl::StatusOr<std::vector<sync::ClusterSimResult>> rows = RunClusterSim(Small({"ssp", "bsp"}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].mode, "ssp");
  EXPECT_EQ((*rows)[1].mode, "bsp");
  const std::vector<std::string> lines =
      absl::StrSplit(FormatClusterSim(*rows), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);  // two header lines, two rows
  EXPECT_TRUE(absl::StartsWith(lines[0], "mode ")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[2], "ssp ")) << lines[2];
  EXPECT_TRUE(absl::StartsWith(lines[3], "bsp ")) << lines[3];
}

TEST(ClusterSimCommandTest, AnUnknownModeIsNamedInTheError) {
  absl::StatusOr<std::vector<sync::ClusterSimResult>> rows = RunClusterSim(Small({"bsp", "nope"}));
  ASSERT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(rows.status().message(), "nope: ")) << rows.status();
  EXPECT_EQ(RunClusterSim(Small({})).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace syncopate::cli
