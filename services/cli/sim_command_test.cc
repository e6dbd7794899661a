#include "cli/sim_command.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace syncopate::cli {
namespace {

SimCommand Small(std::vector<std::string> modes) {
  SimCommand c;
  c.modes = std::move(modes);
  c.sim.trainers = 6;
  c.sim.clocks = 20;
  return c;
}

TEST(SimCommandTest, OneRowPerModeInOrder) {
  absl::StatusOr<std::vector<sync::ClusterSimResult>> rows = RunSim(Small({"ssp", "bsp"}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].mode, "ssp");
  EXPECT_EQ((*rows)[1].mode, "bsp");
  const std::vector<std::string> lines = absl::StrSplit(FormatSim(*rows), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);  // two header lines, two rows
  EXPECT_TRUE(absl::StartsWith(lines[0], "mode ")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[2], "ssp ")) << lines[2];
  EXPECT_TRUE(absl::StartsWith(lines[3], "bsp ")) << lines[3];
}

TEST(SimCommandTest, EveryModeOfTheModeTableIsSimulated) {
  absl::StatusOr<std::vector<sync::ClusterSimResult>> rows = RunSim(Small(sync::SupportedModes()));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), sync::SupportedModes().size());
  for (const sync::ClusterSimResult& row : *rows) {
    EXPECT_GT(row.seconds_per_clock, 0) << row.mode;
    EXPECT_GT(row.compute_time_ratio, 0) << row.mode;
  }
}

TEST(SimCommandTest, AnUnknownModeIsNamedInTheError) {
  absl::StatusOr<std::vector<sync::ClusterSimResult>> rows = RunSim(Small({"bsp", "nope"}));
  ASSERT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(rows.status().message(), "nope: ")) << rows.status();
  EXPECT_EQ(RunSim(Small({})).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace syncopate::cli
