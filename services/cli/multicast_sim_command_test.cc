#include "cli/multicast_sim_command.h"

#include "base/files.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace syncopate::cli {
namespace {

MulticastSimOptions Small() {
  MulticastSimOptions o;
  o.trainers = 20;
  o.rounds = 6;
  o.trials = 2;
  return o;
}

TEST(MulticastSimCommandTest, SelMcastBeatsOrpheusOnHeterogeneousBandwidth) {
  absl::StatusOr<std::vector<MulticastSimRow>> rows = RunMulticastSim(Small());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const MulticastSimRow& sel = (*rows)[0];
  const MulticastSimRow& orpheus = (*rows)[1];
  EXPECT_EQ(sel.mode, "selmcast");
  EXPECT_LT(sel.normalized_completion, orpheus.normalized_completion);
  EXPECT_GE(sel.normalized_completion, 1.0 - 1e-9);  // never below the lower bound
  EXPECT_GE(sel.multicast_scale, orpheus.multicast_scale);
  EXPECT_GE(sel.completion_seconds, sel.estimated_seconds * (1 - 1e-9));
}

TEST(MulticastSimCommandTest, SameSeedSameFigures) {
  auto a = RunMulticastSim(Small());
  auto b = RunMulticastSim(Small());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].completion_seconds, (*b)[i].completion_seconds);
    EXPECT_EQ((*a)[i].multicast_scale, (*b)[i].multicast_scale);
  }
}

TEST(MulticastSimCommandTest, WritesJson) {
  MulticastSimOptions o = Small();
  o.modes = {"orpheus"};
  o.layer = "l7";
  o.json_out = ::testing::TempDir() + "/sim.json";
  ASSERT_TRUE(RunMulticastSim(o).ok());
  nlohmann::json json = nlohmann::json::parse(*base::ReadFile(o.json_out));
  EXPECT_EQ(json["layer"], "l7");
  EXPECT_EQ(json["p"], 6);
  EXPECT_GT(json["modes"]["orpheus"]["completion_seconds"].get<double>(), 0);
}

TEST(MulticastSimCommandTest, RefusesBadOptions) {
  for (auto mutate : std::vector<void (*)(MulticastSimOptions&)>{
           [](MulticastSimOptions& o) { o.modes = {"bsp"}; },
           [](MulticastSimOptions& o) { o.trainers = 1; },
           [](MulticastSimOptions& o) { o.bandwidth_spread = 1.0; },
           [](MulticastSimOptions& o) { o.layer = "l4"; },
           [](MulticastSimOptions& o) { o.rounds = 0; },
           [](MulticastSimOptions& o) { o.min_receivers_fraction = 0; },
       }) {
    MulticastSimOptions o = Small();
    mutate(o);
    EXPECT_EQ(RunMulticastSim(o).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace syncopate::cli
