#include "client/peer_exchange.h"

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

// --peer-inbox-per-sender and --peer-inbox-models set the limits.
TEST(ExchangeInbox, TheLimitsAreTheConfiguredOnes) {
  ExchangeInbox inbox(/*max_per_sender=*/2, /*max_pending=*/3);
  EXPECT_TRUE(inbox.Deposit(0, 7, {{"w", {1}}}).ok());
  EXPECT_TRUE(inbox.Deposit(1, 7, {{"w", {1}}}).ok());
  EXPECT_EQ(inbox.Deposit(2, 7, {{"w", {1}}}).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(inbox.Deposit(0, 8, {{"w", {1}}}).ok());
  EXPECT_EQ(inbox.Deposit(1, 8, {{"w", {1}}}).code(), absl::StatusCode::kResourceExhausted)
      << "three in all";
}

TEST(ExchangeInbox, ASenderCannotFillTheInbox) {
  ExchangeInbox inbox;
  for (int round = 0; round < ExchangeInbox::kMaxPendingPerSender; ++round) {
    ASSERT_TRUE(inbox.Deposit(round, 7, {{"w", {1}}}).ok()) << round;
  }
  const absl::Status full = inbox.Deposit(ExchangeInbox::kMaxPendingPerSender, 7, {{"w", {1}}});
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_TRUE(inbox.Deposit(0, 8, {{"w", {2}}}).ok()) << "another sender is not held back";
  // Collecting round 0 frees that round's place: the sender may send one more.
  std::map<uint64_t, tensor::TensorMap> got = inbox.Collect(0, {7, 8}, absl::InfinitePast());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_TRUE(inbox.Deposit(ExchangeInbox::kMaxPendingPerSender, 7, {{"w", {1}}}).ok());
  EXPECT_EQ(inbox.Deposit(ExchangeInbox::kMaxPendingPerSender + 1, 7, {{"w", {1}}}).code(),
            absl::StatusCode::kResourceExhausted);
  // A background exchange takes everything: every place is free again.
  EXPECT_EQ(inbox.TakeLatest().size(), 1u);
  EXPECT_TRUE(inbox.Deposit(100, 7, {{"w", {1}}}).ok());
}

v1::PeerExchange Naming(std::vector<std::pair<uint64_t, std::string>> peers) {
  v1::PeerExchange exchange;
  for (const auto& [id, name] : peers) {
    v1::PeerRef* ref = exchange.add_receive_from();
    ref->set_trainer_id(id);
    ref->set_name(name);
  }
  return exchange;
}

// A model is taken as sender id N's only when its caller's certificate named N's name (or could
// not be told: no TLS, a pool certificate), also when the coordinator names N after it arrived.
TEST(ExchangeInbox, AModelIsTakenOnlyFromTheSenderTheCoordinatorNamed) {
  ExchangeInbox inbox;
  inbox.NamePeers(Naming({{7, "bob"}}));
  EXPECT_EQ(inbox.NameOf(7), "bob");
  EXPECT_EQ(inbox.NameOf(9), std::nullopt);
  ASSERT_TRUE(inbox.Deposit(0, 7, {{"w", {1}}}, "mallory").ok());
  ASSERT_TRUE(inbox.Deposit(0, 8, {{"w", {2}}}, "").ok());
  ASSERT_TRUE(inbox.Deposit(0, 9, {{"w", {3}}}, "mallory").ok());  // 9 not named yet
  inbox.NamePeers(Naming({{9, "carol"}}));
  std::map<uint64_t, tensor::TensorMap> got = inbox.Collect(0, {7, 8, 9}, absl::InfinitePast());
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(got.count(8), 1u) << "an unchecked caller's model is taken";
  ASSERT_TRUE(inbox.Deposit(1, 7, {{"w", {4}}}, "bob").ok());
  ASSERT_TRUE(inbox.Deposit(1, 9, {{"w", {5}}}, "mallory").ok());
  got = inbox.TakeLatest();
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(got.count(7), 1u);
}

// A forger that got in before the sender was named neither keeps its places nor blocks the sender.
TEST(ExchangeInbox, AForgeryGivesWayOnceTheSenderIsNamed) {
  ExchangeInbox inbox;
  for (int64_t round = 0; round < ExchangeInbox::kMaxPendingPerSender; ++round) {
    ASSERT_TRUE(inbox.Deposit(round, 7, {{"w", {9}}}, "mallory").ok());
  }
  inbox.NamePeers(Naming({{7, "bob"}}));
  // Named now: mallory's models are gone, so bob has all his places for his rounds.
  for (int64_t round = 0; round < ExchangeInbox::kMaxPendingPerSender; ++round) {
    ASSERT_TRUE(inbox.Deposit(round, 7, {{"w", {1}}}, "bob").ok()) << round;
  }
  std::map<uint64_t, tensor::TensorMap> got = inbox.Collect(0, {7}, absl::InfinitePast());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].at("w"), (std::vector<float>{1}));
}

TEST(ExchangeInbox, TheNamedSendersModelReplacesAnEarlierForgery) {
  ExchangeInbox inbox;
  // The Peer service refuses mallory once bob is named; a deposit of hers that raced the naming
  // (checked before, deposited after) gives way to bob's.
  inbox.NamePeers(Naming({{7, "bob"}}));
  ASSERT_TRUE(inbox.Deposit(0, 7, {{"w", {9}}}, "mallory").ok());
  ASSERT_TRUE(inbox.Deposit(0, 7, {{"w", {1}}}, "bob").ok());
  EXPECT_EQ(inbox.Deposit(0, 7, {{"w", {2}}}, "bob").code(), absl::StatusCode::kAlreadyExists);
  std::map<uint64_t, tensor::TensorMap> got = inbox.Collect(0, {7}, absl::InfinitePast());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].at("w"), (std::vector<float>{1}));
}

TEST(ExchangeInbox, TheInboxAsAWholeIsBounded) {
  ExchangeInbox inbox;
  const int senders = ExchangeInbox::kMaxPending / ExchangeInbox::kMaxPendingPerSender;
  for (int s = 0; s < senders; ++s) {
    for (int round = 0; round < ExchangeInbox::kMaxPendingPerSender; ++round) {
      ASSERT_TRUE(inbox.Deposit(round, static_cast<uint64_t>(s), {{"w", {1}}}).ok());
    }
  }
  EXPECT_EQ(inbox.Deposit(0, 100000, {{"w", {1}}}).code(), absl::StatusCode::kResourceExhausted)
      << "a new sender finds the inbox full";
  EXPECT_EQ(inbox.Deposit(0, 0, {{"w", {1}}}).code(), absl::StatusCode::kAlreadyExists)
      << "a duplicate is still named as one";
  // Refusals keep nothing: after the worker collects round 0, each sender has one place again.
  for (uint64_t id = 200000; id < 200100; ++id) {
    EXPECT_EQ(inbox.Deposit(1, id, {{"w", {1}}}).code(), absl::StatusCode::kResourceExhausted);
  }
  inbox.Collect(0, {}, absl::InfinitePast());
  EXPECT_TRUE(inbox.Deposit(1, 200000, {{"w", {1}}}).ok());
}

}  // namespace
}  // namespace syncopate::client
