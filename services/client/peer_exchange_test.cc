#include "client/peer_exchange.h"

#include <cmath>
#include <thread>

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

// Each transfer is kept with its peer and its times from the earliest one; the totals span them
// all; Take starts afresh.
TEST(TransferMeter, KeepsEachTransferWithItsPeerAndTimes) {
  TransferMeter meter;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  meter.Record(7, 1000, t0 + absl::Milliseconds(100), t0 + absl::Milliseconds(600));
  meter.Record(8, 500, t0, t0 + absl::Milliseconds(200));
  TransferTotals totals = meter.Take();
  EXPECT_EQ(totals.bytes, 1500);
  EXPECT_EQ(totals.transfers, 2);
  EXPECT_DOUBLE_EQ(totals.seconds, 0.6);
  ASSERT_EQ(totals.streams.size(), 2u);
  EXPECT_EQ(totals.streams[0].peer, 7u);
  EXPECT_DOUBLE_EQ(totals.streams[0].start_seconds, 0.1);
  EXPECT_DOUBLE_EQ(totals.streams[0].seconds, 0.5);
  EXPECT_EQ(totals.streams[1].peer, 8u);
  EXPECT_DOUBLE_EQ(totals.streams[1].start_seconds, 0);
  EXPECT_TRUE(meter.Take().streams.empty());
  for (int i = 0; i <= TransferMeter::kMaxStreams; ++i) meter.Record(1, 10, t0, t0);
  totals = meter.Take();
  EXPECT_EQ(totals.transfers, TransferMeter::kMaxStreams + 1) << "the totals count every one";
  EXPECT_EQ(totals.streams.size(), static_cast<size_t>(TransferMeter::kMaxStreams));
}

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
  auto got = inbox.Collect(0, {7, 8}, absl::InfinitePast());
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
  auto got = inbox.Collect(0, {7, 8, 9}, absl::InfinitePast());
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
  auto got = inbox.Collect(0, {7}, absl::InfinitePast());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model.at("w"), (std::vector<float>{1}));
}

TEST(ExchangeInbox, TheNamedSendersModelReplacesAnEarlierForgery) {
  ExchangeInbox inbox;
  // The Peer service refuses mallory once bob is named; a deposit of hers that raced the naming
  // (checked before, deposited after) gives way to bob's.
  inbox.NamePeers(Naming({{7, "bob"}}));
  ASSERT_TRUE(inbox.Deposit(0, 7, {{"w", {9}}}, "mallory").ok());
  ASSERT_TRUE(inbox.Deposit(0, 7, {{"w", {1}}}, "bob").ok());
  EXPECT_EQ(inbox.Deposit(0, 7, {{"w", {2}}}, "bob").code(), absl::StatusCode::kAlreadyExists);
  auto got = inbox.Collect(0, {7}, absl::InfinitePast());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model.at("w"), (std::vector<float>{1}));
}

v1::PeerExchange Plan(int64_t round, std::vector<uint64_t> senders) {
  v1::PeerExchange exchange;
  exchange.set_round(round);
  for (uint64_t id : senders) exchange.add_receive_from()->set_trainer_id(id);
  return exchange;
}

// Once a round's plan is known, only its senders may deliver that round; what an unannounced
// sender delivered before is dropped and its place freed. Other rounds are not affected.
TEST(ExchangeInbox, ARoundTakesModelsOnlyFromItsPlannedSenders) {
  ExchangeInbox inbox(/*max_per_sender=*/1);
  ASSERT_TRUE(inbox.Deposit(3, 9, {{"w", {9}}}).ok());  // before round 3's plan is known
  inbox.PlanRound(Plan(3, {7}));
  const absl::Status refused = inbox.Deposit(3, 8, {{"w", {8}}});
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_NE(refused.message().find("trainer 8"), std::string::npos) << refused;
  EXPECT_TRUE(inbox.Deposit(4, 9, {{"w", {4}}}).ok())
      << "9's round-3 model was dropped, so its one place is free; round 4 has no plan yet";
  ASSERT_TRUE(inbox.Deposit(3, 7, {{"w", {7}}}).ok());
  // Planned again (a coordinator that took over), the senders add up.
  inbox.PlanRound(Plan(3, {8}));
  ASSERT_TRUE(inbox.Deposit(3, 8, {{"w", {8}}}).ok());
  auto got = inbox.Collect(3, {7, 8, 9}, absl::InfinitePast());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(got.count(9), 0u);
  // A plan for a round already exchanged changes nothing; round 4 keeps 9's model.
  inbox.PlanRound(Plan(3, {}));
  inbox.PlanRound(Plan(4, {9}));
  got = inbox.Collect(4, {9}, absl::InfinitePast());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[9].model.at("w"), (std::vector<float>{4}));
  // A round planned with no sender takes nothing.
  inbox.PlanRound(Plan(5, {}));
  EXPECT_EQ(inbox.Deposit(5, 9, {{"w", {5}}}).code(), absl::StatusCode::kPermissionDenied);
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

// Push-sum keeps the mean: on a directed plan with uneven in- and out-degrees every trainer's model
// converges to the mean of the initial models, where the equal-weight rule it replaces drifts
// toward the trainers that receive least (their data weighs more).
TEST(MixInto, ConvergesToTheMeanOnAnUnevenDirectedPlan) {
  // 0 -> {1, 2, 3}, 1 -> {2}, 2 -> {3}, 3 -> {0}: strongly connected, in-degrees 1, 1, 2, 2.
  const std::vector<std::vector<uint64_t>> send_to = {{1, 2, 3}, {2}, {3}, {0}};
  const std::vector<float> initial = {0, 4, 8, 12};  // mean 6
  std::vector<tensor::TensorMap> pushsum, equal;
  std::vector<double> mass(4, 1.0);
  for (float v : initial) {
    pushsum.push_back({{"w", {v}}});
    equal.push_back({{"w", {v}}});
  }
  for (int round = 0; round < 200; ++round) {
    std::vector<std::map<uint64_t, PeerModel>> inbox(4), equal_inbox(4);
    std::vector<double> kept(4);
    for (uint64_t i = 0; i < 4; ++i) {
      const double share = mass[i] / static_cast<double>(1 + send_to[i].size());
      kept[i] = share;
      for (uint64_t j : send_to[i]) {
        inbox[j][i] = PeerModel{pushsum[i], share};
        equal_inbox[j][i] = PeerModel{equal[i], 1.0};
      }
    }
    double total = 0;
    for (uint64_t j = 0; j < 4; ++j) {
      absl::StatusOr<double> m = MixInto(pushsum[j], kept[j], inbox[j]);
      ASSERT_TRUE(m.ok()) << m.status();
      mass[j] = *m;
      total += mass[j];
      ASSERT_TRUE(MixInto(equal[j], 1.0, equal_inbox[j]).ok());  // every model weighs the same
    }
    EXPECT_NEAR(total, 4.0, 1e-9) << "no mass is made or lost";
  }
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(pushsum[j].at("w")[0], 6.0f, 1e-3) << j;
  }
  EXPECT_GT(std::abs(equal[0].at("w")[0] - 6.0f), 0.5f) << "the equal-weight rule did not drift";
}

TEST(MixInto, WeighsByMassAndRefusesWhatDoesNotFit) {
  tensor::TensorMap own = {{"w", {0, 0}}};
  absl::StatusOr<double> mass = MixInto(own, 1.0, {{2, PeerModel{{{"w", {4, 8}}}, 3.0}}});
  ASSERT_TRUE(mass.ok()) << mass.status();
  EXPECT_DOUBLE_EQ(*mass, 4.0);
  EXPECT_EQ(own.at("w"), (std::vector<float>{3, 6}));
  for (const PeerModel& bad :
       {PeerModel{{{"w", {1}}}, 1.0}, PeerModel{{{"v", {1, 1}}}, 1.0},
        PeerModel{{{"w", {1, 1}}}, -1.0}, PeerModel{{{"w", {1, 1}}}, std::nan("")}}) {
    EXPECT_EQ(MixInto(own, 1.0, {{2, bad}}).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(own.at("w"), (std::vector<float>{3, 6})) << "unchanged";
  }
  EXPECT_EQ(MixInto(own, -1.0, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A trainer that joined a job under way holds no mass: it takes its peers' models whole, and keeps
// its own while nothing with mass arrived.
TEST(MixInto, ATrainerWithoutMassTakesItsPeersModels) {
  tensor::TensorMap own = {{"w", {100}}};
  absl::StatusOr<double> mass = MixInto(own, 0.0, {{2, PeerModel{{{"w", {9}}}, 0.0}}});
  ASSERT_TRUE(mass.ok());
  EXPECT_EQ(*mass, 0.0);
  EXPECT_EQ(own.at("w")[0], 100) << "nothing weighs anything yet";
  mass = MixInto(own, 0.0, {{2, PeerModel{{{"w", {2}}}, 0.5}}, {3, PeerModel{{{"w", {4}}}, 0.5}}});
  ASSERT_TRUE(mass.ok());
  EXPECT_EQ(*mass, 1.0);
  EXPECT_EQ(own.at("w")[0], 3) << "the peers' mix, nothing of its own";
  // Its models weigh nothing with a receiver that has mass.
  tensor::TensorMap peer = {{"w", {1}}};
  ASSERT_EQ(*MixInto(peer, 1.0, {{4, PeerModel{{{"w", {100}}}, 0.0}}}), 1.0);
  EXPECT_EQ(peer.at("w")[0], 1);
}

// A background exchange takes each sender's newest model with the mass of every model it sent.
TEST(ExchangeInbox, TakeLatestKeepsTheMassOfEveryModel) {
  ExchangeInbox inbox;
  ASSERT_TRUE(inbox.Deposit(1, 7, {{"w", {1}}}, "", 0.25).ok());
  ASSERT_TRUE(inbox.Deposit(2, 7, {{"w", {2}}}, "", 0.5).ok());
  ASSERT_TRUE(inbox.Deposit(2, 8, {{"w", {3}}}, "", 1.0).ok());
  auto latest = inbox.TakeLatest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[7].model.at("w"), (std::vector<float>{2}));
  EXPECT_DOUBLE_EQ(latest[7].mass, 0.75);
  EXPECT_DOUBLE_EQ(latest[8].mass, 1.0);
}

// Running sums: a model is credited what its sender's ledger grew since the last model taken from
// it (all of it for the first), so a share whose transfer failed arrives with the next model, and
// none counts twice.
TEST(ExchangeInbox, AModelIsCreditedWhatItsSendersLedgerGrew) {
  ExchangeInbox inbox;
  inbox.SetIncarnation(3);
  auto deposit = [&](int64_t round, uint64_t ledger, double share, double total) {
    return inbox.Deposit(round, 7, {{"w", {1}}}, "", share, LedgerTotal{ledger, total, 3});
  };
  // Round 0's model (1.0) was lost; round 1's (0.5) carries it.
  ASSERT_TRUE(deposit(1, 42, 0.5, 1.5).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 1.5);
  // Round 2's model (0.25) was lost; round 3's (0.25) carries it.
  ASSERT_TRUE(deposit(3, 42, 0.25, 2.0).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0.5);
  // Round 2's arrives late after all: already credited.
  ASSERT_TRUE(deposit(2, 42, 0.25, 1.75).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0);
  // A refused model credits nothing: the next one carries its share.
  ASSERT_TRUE(deposit(4, 42, 0.25, 2.25).ok());
  EXPECT_EQ(deposit(4, 42, 0.25, 2.5).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(deposit(5, 42, 0.25, 2.75).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0.25 + 0.5);
  // The sender restarted: its new ledger's total is all new.
  ASSERT_TRUE(deposit(6, 43, 0.5, 0.5).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0.5);
  // Without a ledger, the share.
  ASSERT_TRUE(inbox.Deposit(7, 7, {{"w", {1}}}, "", 0.125).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0.125);
}

// A total sent to an earlier life of this trainer (the same id, another incarnation) is not its
// own: that model is refused, or dropped when it is taken if it arrived before the trainer knew
// its incarnation.
TEST(ExchangeInbox, AModelForAnotherIncarnationIsNotTaken) {
  ExchangeInbox inbox;
  ASSERT_TRUE(inbox.Deposit(1, 7, {{"w", {1}}}, "", 0.5, LedgerTotal{42, 9.0, 2}).ok());
  inbox.SetIncarnation(3);
  EXPECT_TRUE(inbox.TakeLatest().empty());
  EXPECT_EQ(inbox.Deposit(2, 7, {{"w", {1}}}, "", 0.5, LedgerTotal{42, 9.0, 2}).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(inbox.Deposit(3, 7, {{"w", {1}}}, "", 0.5, LedgerTotal{42, 0.5, 3}).ok());
  EXPECT_DOUBLE_EQ(inbox.TakeLatest()[7].mass, 0.5) << "incarnation 3's total is its own";
}

// A model dropped as it is taken (not from the sender the coordinator named) credits nothing: the
// sender's next model carries its share.
TEST(ExchangeInbox, ADroppedModelLeavesItsShareToTheNext) {
  ExchangeInbox inbox;
  ASSERT_TRUE(inbox.Deposit(1, 7, {{"w", {1}}}, "mallory", 5, LedgerTotal{42, 5.0}).ok());
  inbox.NamePeers(Naming({{7, "bob"}}));
  ASSERT_TRUE(inbox.Deposit(2, 7, {{"w", {2}}}, "bob", 0.5, LedgerTotal{42, 1.0}).ok());
  auto got = inbox.TakeLatest();
  EXPECT_EQ(got[7].model.at("w"), (std::vector<float>{2}));
  EXPECT_DOUBLE_EQ(got[7].mass, 1.0) << "the first from the ledger: all of its total";
}

// A joiner's first background exchange waits for a peer's model, up to its deadline.
TEST(ExchangeInbox, TakeLatestWaitsForAModelUntilItsDeadline) {
  base::FakeClock clock;
  ExchangeInbox inbox(ExchangeInbox::kMaxPendingPerSender, ExchangeInbox::kMaxPending, clock);
  std::thread time([&] {
    ASSERT_TRUE(clock.AwaitWaiters(1));
    clock.Advance(absl::Seconds(20));
  });
  EXPECT_TRUE(inbox.TakeLatest(clock.Now() + absl::Seconds(20)).empty());
  time.join();
  std::thread sender([&] {
    ASSERT_TRUE(inbox.AwaitWaiter());
    ASSERT_TRUE(inbox.Deposit(3, 7, {{"w", {5}}}).ok());
  });
  auto latest = inbox.TakeLatest(clock.Now() + absl::Minutes(1));
  sender.join();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[7].model.at("w"), (std::vector<float>{5}));
}

}  // namespace
}  // namespace syncopate::client
