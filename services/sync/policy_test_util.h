// Helpers shared by the policy tests.
#ifndef SYNCOPATE_SYNC_POLICY_TEST_UTIL_H_
#define SYNCOPATE_SYNC_POLICY_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sync/policy_factory.h"

namespace syncopate::sync::testing {

inline const absl::Time kT0 = absl::UnixEpoch();

inline std::unique_ptr<SyncPolicy> Make(PolicyOptions options) {
  absl::StatusOr<std::unique_ptr<SyncPolicy>> policy = MakePolicy(options);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : nullptr;
}

inline std::unique_ptr<SyncPolicy> Make(const std::string& mode, int64_t s = 0,
                                        int min_trainers = 1) {
  PolicyOptions options;
  options.mode = mode;
  options.staleness = s;
  options.min_trainers = min_trainers;
  return Make(options);
}

inline std::vector<TrainerId> Granted(const Decisions& d) {
  std::vector<TrainerId> ids;
  for (const Grant& g : d.grants) ids.push_back(g.trainer);
  return ids;
}

inline std::vector<int64_t> Rounds(const Decisions& d) {
  std::vector<int64_t> rounds;
  for (const RoundClose& c : d.close_rounds) rounds.push_back(c.round);
  return rounds;
}

// Joins trainers 1..n at `now` and returns the decisions of all joins.
inline Decisions JoinAll(SyncPolicy& p, int n, absl::Time now = kT0) {
  Decisions all;
  for (TrainerId t = 1; t <= static_cast<TrainerId>(n); ++t) {
    Decisions d;
    EXPECT_TRUE(p.OnJoin(t, now, &d).ok());
    all.Append(std::move(d));
  }
  return all;
}

}  // namespace syncopate::sync::testing

#endif  // SYNCOPATE_SYNC_POLICY_TEST_UTIL_H_
