#include "sync/policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

absl::Status SyncPolicy::ResumeFinalAverage(int64_t round) {
  return absl::FailedPreconditionError(
      absl::StrCat("the job was ending with a final average in round ", round, ", which mode ",
                   name(), " does not have: was the coordinator restarted with another --mode?"));
}

bool SyncPolicy::MayGrantWhileClosing(bool closes_rounds, const std::vector<Grant>& grants) const {
  if (!closes_rounds || !pipelines_grants()) return false;
  return std::all_of(grants.begin(), grants.end(),
                     [](const Grant& g) { return g.pull.kind == PullSpec::Kind::kRound; });
}

void Decisions::Append(Decisions other) {
  close_rounds.insert(close_rounds.end(), other.close_rounds.begin(), other.close_rounds.end());
  preemptions.insert(preemptions.end(), other.preemptions.begin(), other.preemptions.end());
  grants.insert(grants.end(), other.grants.begin(), other.grants.end());
}

absl::Status ClockedPolicy::Recover(int64_t last_closed_round, int expected,
                                    absl::Duration window) {
  gate_ = StartGate(expected, window);
  RecoverRounds(std::max<int64_t>(0, last_closed_round));
  return absl::OkStatus();
}

absl::Status ClockedPolicy::OnResume(const Resumption& r, absl::Time now, Decisions* decisions) {
  if (absl::Status s = CheckJoin(r.trainer); !s.ok()) return s;
  if (r.clock < 0 || r.last_cut > r.clock) {
    return absl::InvalidArgumentError(absl::StrCat("trainer ", r.trainer, " resumes at clock ",
                                                   r.clock, " with pushes taken up to ",
                                                   r.last_cut));
  }
  gate_.NoteJoin(now);
  clocks_.Set(r.trainer, r.clock);
  Resume(r, now, decisions);
  return absl::OkStatus();
}

absl::Status ClockedPolicy::CheckJoin(TrainerId trainer) const {
  if (clocks_.Get(trainer)) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", trainer, " already joined"));
  }
  return absl::OkStatus();
}

absl::Status ClockedPolicy::CheckReport(TrainerId trainer, int64_t clock,
                                        bool awaiting_grant) const {
  std::optional<int64_t> current = clocks_.Get(trainer);
  if (!current) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", trainer, " is not a member"));
  }
  if (awaiting_grant) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer ", trainer, " reported clock ", clock, " before its grant"));
  }
  if (clock != *current + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer ", trainer, " reported clock ", clock, ", expected ", *current + 1));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::sync
