#include "rpc/grpc_util.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

constexpr const char* kStrategy = "GRPC_POLL_STRATEGY";
constexpr const char* kBackupPoll = "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS";

// Puts the variables PreferPollForAFewConnections sets back as the test found them.
class PollVariables : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {kStrategy, kBackupPoll}) {
      const char* value = getenv(name);
      saved_[name] = value == nullptr ? std::nullopt : std::optional<std::string>(value);
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  static std::string Value(const char* name) {
    const char* v = getenv(name);
    return v == nullptr ? "(unset)" : v;
  }

  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(PollVariables, PollAndAShortBackupPollAreChosenWhenNothingIs) {
  PreferPollForAFewConnections();
  EXPECT_EQ(Value(kStrategy), "poll");
  EXPECT_EQ(Value(kBackupPoll), "20");
  EXPECT_EQ(PollForAFewConnections().size(), 2u);
}

TEST_F(PollVariables, WhatTheUserChoseIsKept) {
  setenv(kStrategy, "epoll1", 1);
  setenv(kBackupPoll, "100", 1);
  PreferPollForAFewConnections();
  EXPECT_EQ(Value(kStrategy), "epoll1");
  EXPECT_EQ(Value(kBackupPoll), "100");
}

TEST_F(PollVariables, EachIsChosenOnItsOwn) {
  setenv(kStrategy, "poll", 1);
  PreferPollForAFewConnections();
  EXPECT_EQ(Value(kStrategy), "poll");
  EXPECT_EQ(Value(kBackupPoll), "20");
}

}  // namespace
}  // namespace syncopate::rpc
