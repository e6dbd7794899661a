// What the coordinator shows: the cluster status (GetStatus, `syncopate status`) and the gauges
// of the job and of each live trainer.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "spdlog/spdlog.h"

namespace syncopate::coordinator {

namespace {

// Copies a trainer's gauges into its status (kept there once it departed).
void RecordGauge(v1::TrainerStatus& status, const TrainerGauge& gauge) {
  status.set_staleness_bound(gauge.staleness_bound);
  status.set_group(gauge.group);
  if (gauge.link) {
    status.set_upload_bytes_per_second(gauge.link->upload);
    status.set_download_bytes_per_second(gauge.link->download);
  }
}

}  // namespace

void Coordinator::UpdateGauges() {
  metrics_.live_trainers.Set(static_cast<double>(membership_.live_count()));
  metrics_.min_clock.Set(static_cast<double>(policy_->MinClock().value_or(0)));
  metrics_.groups.Set(policy_->group_count());
}

TrainerGauge Coordinator::GaugeOf(sync::TrainerId id) const {
  TrainerGauge gauge;
  gauge.name = book_.NameOf(id);
  gauge.staleness_bound = policy_->BoundOf(id);
  gauge.group = policy_->GroupOf(id);
  if (const sync::BandwidthEstimator* links = policy_->link_estimates()) {
    gauge.link = links->MeasuredEstimate(id);
  }
  return gauge;
}

void Coordinator::KeepGauges(sync::TrainerId id) {
  if (!book_.NameOf(id).empty()) RecordGauge(book_.Of(id), GaugeOf(id));
}

std::vector<TrainerGauge> Coordinator::TrainerGauges() const {
  absl::MutexLock lock(&mu_);
  std::vector<TrainerGauge> gauges;
  gauges.reserve(sessions_.size());
  const sync::BandwidthEstimator* links = policy_->link_estimates();
  for (const auto& [id, session] : sessions_) {
    TrainerGauge& gauge = gauges.emplace_back(GaugeOf(id));
    if (links == nullptr) continue;
    for (const auto& [receiver, rate] : links->SendsOf(id)) {
      if (const std::string& name = book_.NameOf(receiver); !name.empty()) {
        gauge.sends.emplace_back(name, rate);
      }
    }
  }
  return gauges;
}

sync::TrainerId Coordinator::Evaluator() const { return by_rank_.First(); }

v1::ClusterStatus Coordinator::Status() const {
  absl::MutexLock lock(&mu_);
  v1::ClusterStatus status;
  status.set_mode(policy_->name());
  status.set_staleness_bound(policy_->staleness_bound());
  status.set_uptime_seconds(absl::ToDoubleSeconds(clock_.Now() - started_at_));
  for (const auto& [name, t] : book_.records()) *status.add_trainers() = t;
  // Live trainers' bounds, groups and links as they are now (departed ones keep their last).
  for (v1::TrainerStatus& t : *status.mutable_trainers()) {
    if (t.state() == "live") RecordGauge(t, GaugeOf(t.trainer_id()));
  }
  status.set_min_live_clock(policy_->MinClock().value_or(0));
  status.set_rounds_closed(rounds_closed_);
  if (accuracy_) {
    status.set_test_accuracy(*accuracy_);
    status.set_test_accuracy_at_seconds(accuracy_at_);
  }
  status.set_live_trainers(static_cast<uint32_t>(membership_.live_count()));
  status.set_groups(static_cast<uint32_t>(policy_->group_count()));
  status.set_done(!done_reason_.empty());
  status.set_done_reason(done_reason_);
  status.set_final_round(final_round_);
  if (final_accuracy_) status.set_final_test_accuracy(*final_accuracy_);
  status.set_store_restarts(store_restarts_);
  status.set_store_rounds_lost(store_rounds_lost_);
  status.set_failure(failure_);
  status.set_recovered(recovered_);
  status.set_recovering(phase_ != Phase::kRunning);
  status.set_trainers_resumed(trainers_resumed_);
  status.set_trainers_not_resumed(trainers_not_resumed_);
  return status;
}

}  // namespace syncopate::coordinator
