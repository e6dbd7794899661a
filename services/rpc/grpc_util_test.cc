#include "rpc/grpc_util.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

// Puts GRPC_POLL_STRATEGY back as the test found it.
class PollStrategyVariable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = getenv(kName)) saved_ = v;
  }
  void TearDown() override {
    if (saved_) {
      setenv(kName, saved_->c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }
  static std::string Value() {
    const char* v = getenv(kName);
    return v == nullptr ? "(unset)" : v;
  }

  static constexpr const char* kName = "GRPC_POLL_STRATEGY";
  std::optional<std::string> saved_;
};

TEST_F(PollStrategyVariable, PollIsChosenWhenNothingIs) {
  unsetenv(kName);
  PreferPollForAFewConnections();
  EXPECT_EQ(Value(), "poll");
}

TEST_F(PollStrategyVariable, AStrategyTheUserChoseIsKept) {
  setenv(kName, "epoll1", 1);
  PreferPollForAFewConnections();
  EXPECT_EQ(Value(), "epoll1");
}

}  // namespace
}  // namespace syncopate::rpc
