#include "run_files.h"

#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "gtest/gtest.h"

namespace syncopate::e2e {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::map<std::string, std::string>> rows;
  if (!std::getline(in, line)) return rows;
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = absl::StrSplit(line, ',');
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < fields.size() ? fields[i] : "";
  }
  return rows;
}

std::vector<nlohmann::json> ReadTrace(const std::string& dir, int rank) {
  std::ifstream in(absl::StrCat(dir, "/trainer-", rank, ".trace.jsonl"));
  std::vector<nlohmann::json> events;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) events.push_back(std::move(j));
  }
  return events;
}

int64_t ExpectStalenessWithin(const std::string& dir, int trainers, int64_t s) {
  std::map<int, std::vector<nlohmann::json>> traces;
  for (int r = 0; r < trainers; ++r) traces[r] = ReadTrace(dir, r);
  int64_t max_gap = 0;
  std::vector<std::string> violations = StalenessViolations(traces, s, &max_gap);
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations, first: "
                                  << (violations.empty() ? "" : violations.front()) << "; see "
                                  << dir;
  return max_gap;
}

std::vector<std::string> StalenessViolations(
    const std::map<int, std::vector<nlohmann::json>>& traces, int64_t s, int64_t* max_gap) {
  // Completion times of each trainer's clocks.
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> pushed;  // rank -> (t_us, clock)
  for (const auto& [rank, events] : traces) {
    for (const auto& e : events) {
      if (e["event"] == "pushed") pushed[rank].emplace_back(e["t_us"], e["clock"]);
    }
  }
  // The bound holds over live trainers: a trainer counts only until its last recorded event (it
  // leaves, or is stopped, after that).
  std::map<int, int64_t> last_seen;
  for (const auto& [rank, events] : traces) {
    for (const auto& e : events) last_seen[rank] = std::max<int64_t>(last_seen[rank], e["t_us"]);
  }
  auto completed_by = [&](int rank, int64_t t) {
    int64_t clock = 0;
    for (const auto& [when, c] : pushed[rank]) {
      if (when <= t) clock = std::max(clock, c);
    }
    return clock;
  };
  std::vector<std::string> violations;
  *max_gap = 0;
  for (const auto& [rank, events] : traces) {
    for (const auto& e : events) {
      if (e["event"] != "start") continue;
      const int64_t c = e["clock"];
      const int64_t t = e["t_us"];
      for (const auto& [other, unused] : traces) {
        if (other == rank || t > last_seen[other]) continue;
        const int64_t done = completed_by(other, t);
        *max_gap = std::max(*max_gap, c - done);
        if (c - done > s) {
          violations.push_back(absl::StrCat("trainer ", rank, " started clock ", c + 1,
                                            " while trainer ", other, " had completed ", done));
        }
      }
    }
  }
  return violations;
}

void ExpectIdenticalSnapshots(const std::string& dir, int trainers, size_t shards,
                              int min_pullers) {
  std::map<int64_t, std::set<std::vector<uint32_t>>> by_round;
  std::map<int64_t, int> pullers;
  for (int r = 0; r < trainers; ++r) {
    for (const auto& e : ReadTrace(dir, r)) {
      if (e["event"] != "pull") continue;
      std::vector<uint32_t> checksums = e["checksums"];
      ASSERT_EQ(checksums.size(), shards);
      by_round[e["round"]].insert(checksums);
      pullers[e["round"]]++;
    }
  }
  int shared_rounds = 0;
  for (const auto& [round, sets] : by_round) {
    EXPECT_EQ(sets.size(), 1u) << "round " << round << " differs between trainers";
    shared_rounds += pullers[round] >= min_pullers;
  }
  EXPECT_GT(shared_rounds, 10) << "too few rounds pulled by " << min_pullers << " trainers";
}

void ExpectOthersWentOnAfterTheKill(const std::string& dir, int victim, int64_t clock_at_kill) {
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  for (const auto& t : summary["per_trainer"]) {
    if (t["rank"] == victim) {
      EXPECT_EQ(t["state"], "evicted");
    } else {
      EXPECT_EQ(t["state"], "live");
      EXPECT_GT(t["clock"].get<int64_t>(), clock_at_kill + 50)
          << "trainer " << t["rank"] << " stalled after the kill; see " << dir;
    }
  }
}

void ExpectEvictionReported(const std::string& dir, int victim) {
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  const std::string what = absl::StrCat("trainer ", victim, " evicted: ");
  bool reported = false;
  for (const auto& fault : summary["faults"]) {
    reported |= fault["what"].get<std::string>().rfind(what, 0) == 0;
  }
  EXPECT_TRUE(reported) << "no fault names trainer " << victim
                        << "'s eviction: " << summary["faults"].dump();
  for (const auto& t : summary["per_trainer"]) {
    if (t["rank"] == victim) {
      EXPECT_GE(t["evictions"].get<int>(), 1);
      EXPECT_FALSE(t["eviction_reason"].get<std::string>().empty());
    }
  }
}

std::string Read(const std::string& path) { return base::ReadFile(path).value_or(""); }

std::string CoordinatorAddress(const std::string& dir) {
  const nlohmann::json cluster = ReadJson(dir + "/cluster.json");
  if (cluster.is_discarded()) return "";
  for (const auto& p : cluster["processes"]) {
    if (p["role"] == "coordinator") return absl::StrCat("127.0.0.1:", p["grpc_port"].get<int>());
  }
  return "";
}

std::string MakeTempDir(const std::string& name) {
  const char* base = getenv("TMPDIR");
  std::string pattern = absl::StrCat(base ? base : "/tmp", "/syncopate-e2e-", name, "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

bool PollUntil(const std::function<bool()>& done, absl::Duration limit, absl::Duration every) {
  const absl::Time deadline = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(every);
  }
  return true;
}

int PidOnceTraining(const std::string& dir, int rank,
                    const std::function<bool(const std::string&)>& training, absl::Duration limit) {
  const std::string ready_file = dir + "/trainer-" + std::to_string(rank) + ".ready.json";
  int pid = 0;
  PollUntil(
      [&] {
        nlohmann::json ready = ReadJson(ready_file);
        if (ready.is_discarded() || !training(dir)) return false;
        pid = ready["pid"];
        return true;
      },
      limit, absl::Milliseconds(100));
  return pid;
}

}  // namespace syncopate::e2e
