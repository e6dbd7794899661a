#include "cli/local_command.h"

#include "gtest/gtest.h"

namespace syncopate::cli {
namespace {

TEST(ParseScaleEvents, ParsesAndOrdersEvents) {
  absl::StatusOr<std::vector<ScaleEvent>> events = ParseScaleEvents("60s:-1,30s:+2", 2);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].at, absl::Seconds(30));
  EXPECT_EQ((*events)[0].delta, 2);
  EXPECT_EQ((*events)[1].delta, -1);
  EXPECT_TRUE(ParseScaleEvents("", 2)->empty());
}

TEST(ParseScaleEvents, RefusesBadEntriesAndEmptyingTheCluster) {
  for (const char* bad : {"30s", "30s:1", "30s:+0", "soon:+1", "30s:+x", "30s:-2"}) {
    EXPECT_EQ(ParseScaleEvents(bad, 2).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ParseScaleEvents("10s:+1,20s:-2", 2).ok());
}

// Every trainer left and exited 0: the job finished, after as many steps as they took.
TEST(DescribeFinish, SaysHowManyStepsEveryTrainerCompleted) {
  EXPECT_EQ(DescribeFinish({30, 30, 30}, 0), "finished: every trainer completed 30 steps");
  EXPECT_EQ(DescribeFinish({28, 30}, 0), "finished: every trainer completed its steps (28-30)");
  EXPECT_EQ(DescribeFinish({30, 30}, 1), std::nullopt) << "a trainer failed";
  EXPECT_EQ(DescribeFinish({}, 0), std::nullopt) << "nobody ran";
}

}  // namespace
}  // namespace syncopate::cli
