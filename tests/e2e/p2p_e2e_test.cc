// End-to-end: the peer-to-peer modes (dssync, selmcast, selmcast-ssp, orpheus, orpheus-ssp) under
// `syncopate local`, checked through reports and traces: they train to the target (dssync then
// averages every trainer's model), SelMcast
// spares a trainer behind a slow link where Orpheus does not, and a dead trainer costs its peers
// one exchange deadline.
#include <signal.h>

#include <algorithm>

#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

// Totals over one trainer's "exchange" trace events.
struct Exchanges {
  int count = 0;
  int64_t expected = 0;  // models it was due to receive
  int64_t received = 0;  // models that arrived by the deadline
  // The same, without the last exchange: at the end of a run peers stop while it is under way.
  int64_t expected_before_last = 0;
  int64_t received_before_last = 0;
  double seconds = 0;
  int64_t last_round = 0;
};

Exchanges ReadExchanges(const std::string& dir, int rank) {
  Exchanges x;
  for (const auto& e : ReadTrace(dir, rank)) {
    if (e["event"] != "exchange") continue;
    x.expected_before_last = x.expected;
    x.received_before_last = x.received;
    ++x.count;
    x.expected += e["expected"].get<int64_t>();
    x.received += e["received"].get<int64_t>();
    x.seconds += e["seconds"].get<double>();
    x.last_round = std::max<int64_t>(x.last_round, e["round"]);
  }
  return x;
}

class PeerMode : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerMode, ReachesTheTargetExchangingEveryRound) {
  const std::string mode = GetParam();
  const std::string dir = MakeTempDir("p2p-" + mode);
  const int status = RunLocal(
      dir, {"--mode=" + mode, "--trainers=3", "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_EQ(summary["mode"], mode);
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  // Every multicast names at least p = 1 of the 2 others, and delivers to no more than it names.
  EXPECT_GE(summary["planned_multicast_scale"].get<double>(), 0.5) << "see " << dir;
  EXPECT_GT(summary["multicast_scale"].get<double>(), 0) << "see " << dir;
  EXPECT_LE(summary["multicast_scale"].get<double>(),
            summary["planned_multicast_scale"].get<double>())
      << "see " << dir;
  // dssync ends with its final average: one round of all three, whose models all arrive, and the
  // evaluator's accuracy of the average. The other modes have none.
  const int64_t final_round = summary["final_average"]["round"].get<int64_t>();
  if (mode == "dssync") {
    ASSERT_GT(final_round, 0) << "see " << dir;
    ASSERT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
    // The average of three models that mixed every round is as good as they were.
    EXPECT_GE(summary["final_average"]["accuracy"].get<double>(), 0.75) << "see " << dir;
  } else {
    EXPECT_EQ(final_round, 0);
  }
  for (int rank = 0; rank < 3; ++rank) {
    const Exchanges x = ReadExchanges(dir, rank);
    EXPECT_GT(x.count, 20) << "trainer " << rank;
    if (mode == "dssync") {
      EXPECT_EQ(x.last_round, final_round) << "trainer " << rank;
      EXPECT_EQ(x.expected - x.expected_before_last, 2) << "trainer " << rank;
      EXPECT_EQ(x.received, x.expected) << "trainer " << rank << "; see " << dir;
    }
    if (mode == "selmcast-ssp" || mode == "orpheus-ssp") {
      // Models arrive in the background and nothing is awaited: some must have arrived.
      EXPECT_EQ(x.expected, 0);
      EXPECT_GT(x.received, 0) << "trainer " << rank << " never received a model";
      continue;
    }
    EXPECT_GT(x.expected, 0) << "trainer " << rank << " never received a model";
    // No trainer failed, so every model due arrived (but perhaps in the last exchange, which
    // the end of the run interrupts: the peers it waits for are leaving).
    EXPECT_EQ(x.received_before_last, x.expected_before_last)
        << "trainer " << rank << "; see " << dir;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PeerMode,
                         ::testing::Values("dssync", "selmcast", "selmcast-ssp", "orpheus",
                                           "orpheus-ssp"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A trainer that joins a running peer-to-peer job holds an untrained model: it joins with no mass,
// and its first exchange, which always has a sender, gives it its peers' models and their mass
// (docs/modes.md "Mixing weights"). That exchange comes before its first step, so that its first
// step starts from its peers' models (under selmcast-ssp, it waits there for a peer's model).
class P2PJoiner : public ::testing::TestWithParam<std::string> {};

TEST_P(P2PJoiner, TakesItsPeersModels) {
  const std::string mode = GetParam();
  const std::string dir = MakeTempDir("p2p-joiner-" + mode);
  // dssync with one group: the joiner's group always holds a trained peer.
  const int status = RunLocal(dir, {"--mode=" + mode, "--trainers=2", "--scale-events=3s:+1",
                                    "--groups=1", "--target-accuracy=0.99", "--time-limit=20s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  int64_t start = -1;
  std::vector<nlohmann::json> exchanges;
  for (const auto& e : ReadTrace(dir, 2)) {
    if (e["event"] == "start" && start < 0) start = e["clock"];
    if (e["event"] == "exchange") exchanges.push_back(e);
  }
  ASSERT_GT(start, 0) << "the joiner should start in the running job; see " << dir;
  ASSERT_FALSE(exchanges.empty()) << "see " << dir;
  EXPECT_EQ(exchanges[0]["round"].get<int64_t>(), start) << "before its first step; see " << dir;
  EXPECT_GE(exchanges[0]["received"].get<int>(), 1) << "its first round has a sender";
  EXPECT_GT(exchanges[0]["mass"].get<double>(), 0) << "it took its peers' mass";
  // The job's masses sum to the two trainers it started with: the joiner brought none. Each
  // trainer's last recorded mass is what it held at the end (a background multicast gives shares
  // away after its exchange, and records what stays). Shares still on their way, or waiting in an
  // inbox, make the sum less. In the round modes that happens only to shares whose transfer
  // failed; under selmcast-ssp about half the mass is on its way at any moment (0.60-1.53 in
  // eight runs of a6c2fca), so there only the upper bound is exact.
  double total = 0;
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<nlohmann::json> trace = ReadTrace(dir, rank);
    for (auto it = trace.rbegin(); it != trace.rend(); ++it) {
      if ((*it)["event"] == "exchange" || (*it)["event"] == "multicast") {
        total += (*it)["mass"].get<double>();
        break;
      }
    }
  }
  EXPECT_GT(total, mode == "selmcast-ssp" ? 0 : 0.5) << "see " << dir;
  EXPECT_LE(total, 2.0 + 1e-6) << "see " << dir;
}

INSTANTIATE_TEST_SUITE_P(Modes, P2PJoiner, ::testing::Values("selmcast", "dssync", "selmcast-ssp"));

TEST(P2PE2E, SelMcastSparesTheSlowLinkAndItsRoundsFinishSooner) {
  // Trainer 3 downloads at 20 Mbit/s, the others at 100; all upload at 100.
  auto run = [](const std::string& mode) {
    const std::string dir = MakeTempDir("slow-link-" + mode);
    const int status = RunLocal(
        dir, {"--mode=" + mode, "--trainers=4", "--target-accuracy=0.99", "--time-limit=15s",
              "--ingress-rate=100mbit,100mbit,100mbit,20mbit", "--egress-rate=100mbit"});
    EXPECT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
    return dir;
  };
  const std::string selmcast = run("selmcast");
  const std::string orpheus = run("orpheus");
  const Exchanges sel_slow = ReadExchanges(selmcast, 3);
  const Exchanges orph_slow = ReadExchanges(orpheus, 3);
  ASSERT_GT(sel_slow.count, 10) << "see " << selmcast;
  ASSERT_GT(orph_slow.count, 10) << "see " << orpheus;
  // Models sent to the slow trainer per round: SelMcast balances by measured bandwidth.
  const double sel_senders = static_cast<double>(sel_slow.expected) / sel_slow.count;
  const double orph_senders = static_cast<double>(orph_slow.expected) / orph_slow.count;
  EXPECT_LT(sel_senders, orph_senders) << "see " << selmcast << " and " << orpheus;
  // Its rounds end sooner: the mean exchange of every trainer, from the runs' own traces.
  auto mean_exchange = [](const std::string& dir) {
    double seconds = 0;
    int count = 0;
    for (int rank = 0; rank < 4; ++rank) {
      const Exchanges x = ReadExchanges(dir, rank);
      seconds += x.seconds;
      count += x.count;
    }
    return seconds / count;
  };
  EXPECT_LT(mean_exchange(selmcast), mean_exchange(orpheus));
  RecordProperty("selmcast_senders_to_slow", std::to_string(sel_senders));
  RecordProperty("orpheus_senders_to_slow", std::to_string(orph_senders));
}

TEST(P2PE2E, ADeadTrainerReleasesItsPeers) {
  // The exchange deadline is far beyond the run's length: the coordinator's PeerLeft, sent when
  // the dead trainer's stream breaks, must be what releases the peers waiting for its model.
  const std::string dir = MakeTempDir("p2p-kill");
  auto local = StartLocal(
      dir, {"--mode=selmcast", "--trainers=3", "--target-accuracy=0.99", "--time-limit=12s",
            "--eviction-timeout=3s", "--exchange-timeout=120s", "--p=1"});
  ASSERT_NE(local, nullptr);
  const int victim =
      PidOnceTraining(dir, 2, [](const std::string& d) { return ReadExchanges(d, 2).count > 20; });
  ASSERT_NE(victim, 0) << "trainer 2 never exchanged; see " << dir;
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const int64_t killed_at = ReadExchanges(dir, 0).last_round;
  std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "run did not finish";
  EXPECT_EQ(ExitCode(*status), 4) << "a run that lost a trainer exits 4; "
                                  << cli::DescribeExit(*status);
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  for (const auto& t : summary["per_trainer"]) {
    if (t["rank"] == 2) {
      EXPECT_EQ(t["state"], "evicted");
    }
  }
  ExpectEvictionReported(dir, 2);
  // The survivors went on exchanging (with p = 1.0 every trainer sends to every other, so the
  // dead one was due in the round it died in).
  for (int rank : {0, 1}) {
    EXPECT_GT(ReadExchanges(dir, rank).last_round, killed_at + 50)
        << "trainer " << rank << " stalled after the kill; see " << dir;
  }
}

// `syncopate finish` (docs/modes.md, dssync): an operator ends a running dssync job; its trainers
// average their models in one last round, leave, and the run ends normally with the average's
// accuracy, long before its time limit.
TEST(P2PE2E, AnOperatorEndsADsSyncJobWithAFinalAverage) {
  const std::string dir = MakeTempDir("p2p-finish");
  auto local = StartLocal(dir, {"--mode=dssync", "--trainers=3", "--target-accuracy=0.99",
                                "--time-limit=300s", "--step-time=5ms"});
  ASSERT_NE(local, nullptr);
  std::string coordinator;
  auto training = [&](const std::string& d) {
    coordinator = CoordinatorAddress(d);
    return !coordinator.empty() && ReadExchanges(d, 2).count > 10;
  };
  ASSERT_NE(PidOnceTraining(dir, 2, training), 0) << "trainer 2 never exchanged; see " << dir;
  const std::string log = dir + "/finish.out";
  const int finish = RunBinary("syncopate",
                               {"finish", "--coordinator=" + coordinator,
                                "--tls-dir=" + dir + "/tls/operator", "--reason=enough"},
                               log);
  ASSERT_EQ(ExitCode(finish), 0) << Read(log);
  EXPECT_NE(Read(log).find("the trainers average their models in round"), std::string::npos)
      << Read(log);
  const std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "the run did not end; see " << dir;
  EXPECT_EQ(ExitCode(*status), 0) << cli::DescribeExit(*status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_FALSE(summary["reached_target"].get<bool>());
  EXPECT_LT(summary["wall_seconds"].get<double>(), 200) << "it ran to the time limit";
  const int64_t final_round = summary["final_average"]["round"].get<int64_t>();
  EXPECT_GT(final_round, 10);
  EXPECT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_EQ(t["state"], "done") << t.dump();
    EXPECT_EQ(t["clock"].get<int64_t>(), final_round) << t.dump();
  }
}

TEST(P2PE2E, BadLinkRatesAreClearErrors) {
  const std::string dir = MakeTempDir("p2p-bad");
  EXPECT_EQ(ExitCode(RunLocal(dir, {"--mode=selmcast", "--trainers=2", "--egress-rate=fast"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(
                dir, {"--mode=selmcast", "--trainers=2", "--ingress-rate=1mbit,1mbit,1mbit"})),
            2);
  EXPECT_EQ(ExitCode(RunLocal(dir, {"--mode=selmcast", "--trainers=2", "--p=0"})), 2);
  // Top-k needs deltas, which these modes do not send.
  EXPECT_EQ(ExitCode(RunLocal(dir, {"--mode=dssync", "--trainers=2", "--compression=topk:0.01"})),
            2);
}

// Models exchanged in bf16 (docs/compression.md): the job still reaches its target, and its final
// average is as good.
TEST(P2PE2E, ADsSyncJobExchangingHalvesReachesTheTarget) {
  const std::string dir = MakeTempDir("p2p-bf16");
  const int status = RunLocal(dir, {"--mode=dssync", "--compression=bf16", "--trainers=3",
                                    "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  ASSERT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
  EXPECT_GE(summary["final_average"]["accuracy"].get<double>(), 0.75) << "see " << dir;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_GT(ReadExchanges(dir, rank).received, 20) << "trainer " << rank << "; see " << dir;
  }
}

}  // namespace
}  // namespace syncopate::e2e
