#include "cli/sim_command.h"

#include "base/files.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace syncopate::cli {
namespace {

SimOptions Small() {
  SimOptions o;
  o.trainers = 20;
  o.rounds = 6;
  o.trials = 2;
  return o;
}

TEST(SimCommandTest, SelMcastBeatsOrpheusOnHeterogeneousBandwidth) {
  absl::StatusOr<std::vector<SimRow>> rows = RunSim(Small());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const SimRow& sel = (*rows)[0];
  const SimRow& orpheus = (*rows)[1];
  EXPECT_EQ(sel.mode, "selmcast");
  EXPECT_LT(sel.normalized_completion, orpheus.normalized_completion);
  EXPECT_GE(sel.normalized_completion, 1.0 - 1e-9);  // never below the lower bound
  EXPECT_GE(sel.multicast_scale, orpheus.multicast_scale);
  EXPECT_GE(sel.completion_seconds, sel.estimated_seconds * (1 - 1e-9));
}

TEST(SimCommandTest, SameSeedSameFigures) {
  auto a = RunSim(Small());
  auto b = RunSim(Small());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].completion_seconds, (*b)[i].completion_seconds);
    EXPECT_EQ((*a)[i].multicast_scale, (*b)[i].multicast_scale);
  }
}

TEST(SimCommandTest, WritesJson) {
  SimOptions o = Small();
  o.modes = {"orpheus"};
  o.layer = "l7";
  o.json_out = ::testing::TempDir() + "/sim.json";
  ASSERT_TRUE(RunSim(o).ok());
  nlohmann::json json = nlohmann::json::parse(*base::ReadFile(o.json_out));
  EXPECT_EQ(json["layer"], "l7");
  EXPECT_EQ(json["p"], 6);
  EXPECT_GT(json["modes"]["orpheus"]["completion_seconds"].get<double>(), 0);
}

TEST(SimCommandTest, RefusesBadOptions) {
  for (auto mutate : std::vector<void (*)(SimOptions&)>{
           [](SimOptions& o) { o.modes = {"bsp"}; },
           [](SimOptions& o) { o.trainers = 1; },
           [](SimOptions& o) { o.bandwidth_spread = 1.0; },
           [](SimOptions& o) { o.layer = "l4"; },
           [](SimOptions& o) { o.rounds = 0; },
           [](SimOptions& o) { o.min_receivers_fraction = 0; },
       }) {
    SimOptions o = Small();
    mutate(o);
    EXPECT_EQ(RunSim(o).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace syncopate::cli
