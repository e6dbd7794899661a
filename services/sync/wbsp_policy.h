// WBSP, worker-busy synchronous parallel (Yang et al., Parallel Computing 2024), with the general
// trigger the published code lacks. Trainers never wait: each runs local SGD on its own model and
// pushes the delta since its last push after every step (wbsp) or whenever its communication
// thread is free (wbsp-overlap); every report is granted at once. A round closes when every live
// trainer has pushed at least once since the last close (that is, at the slowest trainer's push,
// derived from live membership); it takes every push reported so far, and each trainer is told to
// pull that round in the reply to its next report (the slowest at once). The round snapshot is the
// same bytes for every trainer, whatever the fast trainers push while it closes.
#ifndef SYNCOPATE_SYNC_WBSP_POLICY_H_
#define SYNCOPATE_SYNC_WBSP_POLICY_H_

#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "sync/policy.h"
#include "sync/round_cuts.h"

namespace syncopate::sync {

struct WbspConfig {
  // kSumOverN adds every delta with weight 1/N as published; kMean averages the round's pushes.
  Aggregation aggregation = Aggregation::kSumOverN;
  // wbsp-overlap: compute and communication on separate threads.
  bool overlap = false;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

class WbspPolicy final : public ClockedPolicy {
 public:
  explicit WbspPolicy(WbspConfig config);

  std::string name() const override { return config_.overlap ? "wbsp-overlap" : "wbsp"; }
  PushMode push_mode() const override { return PushMode::kRound; }
  int64_t staleness_bound() const override { return -1; }
  bool overlap_communication() const override { return config_.overlap; }

  // Every trainer starts at clock 0: WBSP has no clock rule across trainers.
  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;

  int64_t last_closed_round() const override { return last_closed_round_; }

 private:
  void RecoverRounds(int64_t last_closed_round) override;
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  // Closes the round when every live trainer has pushed since the last close.
  void MaybeClose(Decisions* decisions);
  // First grants (pull the latest round) once the start gate opens.
  void GrantNewcomers(absl::Time now, Decisions* decisions);

  const WbspConfig config_;
  RoundCuts cuts_;
  // Joined (or resumed awaiting a grant), first grant not yet sent: the clock up to which the
  // round it will pull holds its pushes (-1: none).
  std::map<TrainerId, int64_t> newcomers_;
  absl::flat_hash_set<TrainerId> pushed_;  // pushed since the last close
  // The round to pull in the reply to the next report.
  absl::flat_hash_map<TrainerId, PullSpec> pull_;
  int64_t last_closed_round_ = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_WBSP_POLICY_H_
