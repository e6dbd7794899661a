#include "rpc/poll_engine.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// As a name=value string, for readable expectations.
std::vector<std::string> Added(std::optional<std::string> strategy,
                               std::optional<std::string> backup_poll) {
  std::vector<std::string> added;
  for (const EnvironmentVariable& variable : PollEnvironment(strategy, backup_poll)) {
    added.push_back(variable.name + "=" + variable.value);
  }
  return added;
}

TEST(PollEnvironmentTest, PollAndAShortBackupPollWhenNothingIsSet) {
  EXPECT_THAT(
      Added(std::nullopt, std::nullopt),
      ElementsAre("GRPC_POLL_STRATEGY=poll", "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20"));
}

TEST(PollEnvironmentTest, AUsersPollGetsTheShortBackupPoll) {
  EXPECT_THAT(Added("poll", std::nullopt),
              ElementsAre("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20"));
}

TEST(PollEnvironmentTest, WhatTheUserSetIsKept) {
  EXPECT_THAT(Added(std::nullopt, "100"), ElementsAre("GRPC_POLL_STRATEGY=poll"));
  EXPECT_THAT(Added("poll", "100"), IsEmpty());
}

TEST(PollEnvironmentTest, AnotherStrategyGetsNothing) {
  EXPECT_THAT(Added("epoll1", std::nullopt), IsEmpty());
  EXPECT_THAT(Added("all", std::nullopt), IsEmpty());
}

}  // namespace
}  // namespace syncopate::rpc
