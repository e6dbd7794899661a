// Reading what a `syncopate local` run leaves in its report directory: summary.json, cluster.json
// and the trainers' JSON-lines traces.
#ifndef SYNCOPATE_TESTS_E2E_RUN_FILES_H_
#define SYNCOPATE_TESTS_E2E_RUN_FILES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace syncopate::e2e {

nlohmann::json ReadJson(const std::string& path);

// The rows of a CSV file with a header line and no quoted commas, as column -> value (a missing
// trailing value reads as ""); empty for a missing file.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path);

// The events of trainer `rank`'s trace, in file order.
std::vector<nlohmann::json> ReadTrace(const std::string& dir, int rank);

// Checks the bounded-staleness guarantee from traces: whenever a trainer started clock c + 1 (its
// "start" event with clock c), every other trainer had completed at least c - s clocks by then
// (its "pushed" events up to that time), as long as that other trainer was still active (had
// events at or after that time). Returns the violations found (empty: guarantee held) and
// sets `max_gap` to the largest c - min observed.
std::vector<std::string> StalenessViolations(
    const std::map<int, std::vector<nlohmann::json>>& traces, int64_t s, int64_t* max_gap);

// Checks (gtest expectations) from the traces of trainers 0..trainers-1 in `dir` that the
// bounded-staleness guarantee held for bound `s` (StalenessViolations); returns the largest gap.
int64_t ExpectStalenessWithin(const std::string& dir, int trainers, int64_t s);

// Checks (gtest expectations) that every round's snapshot checksums, one per store shard, are the
// same for all trainers that pulled it, and that more than 10 rounds were pulled by at least
// `min_pullers` trainers (so the check is not vacuous).
void ExpectIdenticalSnapshots(const std::string& dir, int trainers, size_t shards, int min_pullers);

// Checks (gtest expectations) the summary of the run in `dir`, in which trainer `victim` was
// killed: it was evicted, and every other trainer is live and went past clock
// `clock_at_kill` + 50 (it did not stall).
void ExpectOthersWentOnAfterTheKill(const std::string& dir, int victim, int64_t clock_at_kill);

// Checks that the run in `dir` reported trainer `victim`'s eviction as a fault (a faults entry
// naming it, its eviction counted in per_trainer): a run that lost a trainer is no normal finish.
void ExpectEvictionReported(const std::string& dir, int victim);

// A fresh directory under the test's temporary directory.
std::string MakeTempDir(const std::string& name);

// The contents of the file at `path`; "" when it cannot be read.
std::string Read(const std::string& path);

// The coordinator's address (127.0.0.1:PORT) of the run in `dir`, from its cluster.json (written
// once every process started); "" before.
std::string CoordinatorAddress(const std::string& dir);

// Whether `done()` came true, polled every `every` for at most `limit` (a process's files, logs or
// ports, which give no other signal).
bool PollUntil(const std::function<bool()>& done, absl::Duration limit,
               absl::Duration every = absl::Milliseconds(20));

// The pid of trainer `rank` of the run in `dir` once `training(dir)` says it trains, polled every
// 100 ms for at most `limit`; 0 when that never happened.
int PidOnceTraining(const std::string& dir, int rank,
                    const std::function<bool(const std::string&)>& training,
                    absl::Duration limit = absl::Seconds(60));

}  // namespace syncopate::e2e

#endif  // SYNCOPATE_TESTS_E2E_RUN_FILES_H_
