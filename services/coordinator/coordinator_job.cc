// The job as a whole: taking over a job the stores hold (a restarted coordinator), waiting for its
// trainers to resume, ending training (a final average or Done), and failing the job.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "coordinator/trainer_input.h"
#include "spdlog/spdlog.h"

namespace syncopate::coordinator {

void Coordinator::TakeOverFromStores(const std::vector<ShardState>& shards) {
  // Every shard that had a membership had the same one; cuts and rounds may differ by the round
  // being closed when the last coordinator stopped: the furthest shard speaks for the job (the
  // others catch up with it when the membership goes out).
  const ShardState* furthest = nullptr;
  for (const ShardState& shard : shards) {
    if (shard.has_membership &&
        (!furthest || shard.last_closed_round > furthest->last_closed_round)) {
      furthest = &shard;
    }
  }
  // The job's end, when the coordinator before began it: any shard that kept it speaks for all, one
  // with the evaluator's accuracy first (a membership may have reached only some shards).
  std::optional<v1::JobEnd> job_end;
  for (const ShardState& shard : shards) {
    if (shard.job_end && (!job_end || shard.job_end->has_final_test_accuracy())) {
      job_end = shard.job_end;
    }
  }
  if (job_end) {
    final_round_ = job_end->final_round();
    finish_reason_ = job_end->reason();
    if (job_end->has_final_test_accuracy()) final_accuracy_ = job_end->final_test_accuracy();
    if (absl::Status s = policy_->ResumeFinalAverage(final_round_); !s.ok()) {
      phase_ = Phase::kRunning;
      Fail(std::string(s.message()));
      return;
    }
  }
  if (!furthest || furthest->members.empty()) {
    phase_ = Phase::kRunning;
    if (job_end) {  // every trainer had left: the job is over
      recovered_ = true;
      done_reason_ = absl::StrCat(finish_reason_, "; the job had ended with round ", final_round_,
                                  ", the final average, when this coordinator took it over");
      spdlog::info("training is done: {}", done_reason_);
    }
    return;
  }
  const int64_t round = std::max<int64_t>(0, furthest->last_closed_round);
  absl::Status recover =
      policy_->Recover(round, static_cast<int>(furthest->members.size()), options_.recovery_window);
  if (!recover.ok()) {
    phase_ = Phase::kRunning;
    Fail(std::string(recover.message()));
    return;
  }
  for (const ShardMember& m : furthest->members) {
    expected_[m.id] = m;
    membership_.ReserveIds(m.id);
  }
  // A shard that restarted too knows no names: take each member's from any shard that does.
  for (const ShardState& shard : shards) {
    for (const ShardMember& m : shard.members) {
      auto it = expected_.find(m.id);
      if (it != expected_.end() && it->second.name.empty()) it->second.name = m.name;
    }
  }
  last_round_ = round;
  stores_queue_.MembershipChanged();  // a shard behind the furthest one catches up with it
  recovered_ = true;
  phase_ = Phase::kRecovering;
  recovery_ends_ = clock_.Now() + options_.recovery_window;
  metrics_.recoveries.Increment();
  spdlog::warn(
      "the stores hold a job under way (round {}, {} trainers): taking it over; waiting up to {} "
      "for its trainers to resume",
      round, expected_.size(), absl::FormatDuration(options_.recovery_window));
  if (job_end) {
    spdlog::warn("the job was ending ({}): its trainers average their models in round {}",
                 finish_reason_, final_round_);
  }
}

void Coordinator::EndRecovery() {
  if (phase_ != Phase::kRecovering) return;
  phase_ = Phase::kRunning;
  trainers_not_resumed_ = static_cast<uint32_t>(expected_.size());
  for (const auto& [id, m] : expected_) {
    spdlog::warn("trainer {} (incarnation {}) did not resume within {}: it is out of the job", id,
                 m.incarnation, absl::FormatDuration(options_.recovery_window));
  }
  // Their pending pushes, reported to the previous coordinator, are lost with them.
  if (!expected_.empty()) stores_queue_.MembershipChanged();
  expected_.clear();
  spdlog::info("recovery over: {} trainers resumed, {} did not", trainers_resumed_,
               trainers_not_resumed_);
  MaybeDone();
}

int Coordinator::JobSize() const {
  return static_cast<int>(membership_.live_count() + expected_.size());
}

std::vector<sync::Member> Coordinator::StoreMembers() const {
  std::vector<sync::Member> members = membership_.Live();
  for (const auto& [id, m] : expected_) {
    sync::Member member;
    member.id = id;
    member.incarnation = m.incarnation;
    member.name = m.name;
    members.push_back(std::move(member));
  }
  std::sort(members.begin(), members.end(),
            [](const sync::Member& a, const sync::Member& b) { return a.id < b.id; });
  return members;
}

absl::StatusOr<int64_t> Coordinator::Finish(const std::string& reason) {
  if (absl::Status s = CheckFinishReason(reason); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (!failure_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the job failed: ", failure_));
  }
  if (phase_ != Phase::kRunning && final_round_ == 0 && done_reason_.empty()) {
    // The final round must come after every clock, and the trainers' clocks are not all known
    // until they have resumed.
    return absl::UnavailableError(
        "the coordinator is taking over a job under way and waits for its trainers to resume; "
        "finish again shortly");
  }
  return EndTraining(reason);
}

int64_t Coordinator::EndTraining(const std::string& reason) {
  if (final_round_ > 0 || !done_reason_.empty()) return final_round_;
  // With nobody to average, training is simply done.
  if (membership_.live_count() > 0) {
    if (std::optional<int64_t> round = policy_->BeginFinalAverage()) {
      final_round_ = *round;
      finish_reason_ = reason;
      stores_queue_
          .MembershipChanged();  // the stores keep the job's end for a coordinator taking over
      spdlog::info("training ends ({}): every trainer averages in round {}, then leaves", reason,
                   final_round_);
      return final_round_;
    }
  }
  done_reason_ = reason;
  spdlog::info("training is done: {}", done_reason_);
  for (auto& [id, session] : sessions_) SendDone(session.outbox);
  return 0;
}

void Coordinator::MaybeDone() {
  if (final_round_ == 0 || !done_reason_.empty() || !failure_.empty() || JobSize() > 0) return;
  done_reason_ = final_granted_.empty()
                     ? absl::StrCat(finish_reason_, "; every trainer left before round ",
                                    final_round_, ", the final average")
                     : absl::StrCat(finish_reason_, "; ", final_granted_.size(),
                                    " trainer(s) averaged their models in round ", final_round_);
  spdlog::info("training is done: {}", done_reason_);
}

std::optional<v1::JobEnd> Coordinator::JobEndToKeep() const {
  if (final_round_ == 0) return std::nullopt;
  v1::JobEnd end;
  end.set_final_round(final_round_);
  end.set_reason(finish_reason_);
  if (final_accuracy_) end.set_final_test_accuracy(*final_accuracy_);
  return end;
}

void Coordinator::Fail(const std::string& reason) {
  if (!failure_.empty()) return;
  failure_ = reason;
  spdlog::error("the job cannot go on: {}", reason);
  std::vector<SessionKey> live;
  for (const auto& [id, session] : sessions_) live.push_back({id, session.incarnation});
  for (const SessionKey& key : live) Depart(key, "evicted", "the job failed: " + reason);
}

void Coordinator::SendDone(const std::shared_ptr<Outbox>& outbox) {
  v1::Directive done;
  done.mutable_done()->set_reason(done_reason_);
  Action action;
  action.sends.emplace_back(outbox, std::move(done));
  Enqueue(std::move(action));
}

void Coordinator::TellPeersGone(sync::TrainerId id) {
  if (policy_->push_mode() != sync::PushMode::kNone) return;
  Action action;
  for (const auto& [peer, session] : sessions_) {
    if (peer == id) continue;
    v1::Directive left;
    left.mutable_peer_left()->set_trainer_id(id);
    action.sends.emplace_back(session.outbox, std::move(left));
  }
  if (!action.sends.empty()) Enqueue(std::move(action));
}

}  // namespace syncopate::coordinator
