#include "coordinator/trainer_book.h"

namespace syncopate::coordinator {

void TrainerBook::Admit(const sync::Member& member, uint32_t rank, int64_t clock, double slowdown) {
  names_[member.id] = member.name;
  v1::TrainerStatus& status = records_[member.name];
  status.set_trainer_id(member.id);
  status.set_incarnation(member.incarnation);
  status.set_name(member.name);
  status.set_rank(rank);
  status.set_state("live");
  status.set_clock(clock);
  status.set_slowdown(slowdown);
  status.clear_timings();
  status.set_compute_time_ratio(0);
}

v1::TrainerStatus& TrainerBook::Of(sync::TrainerId id) { return records_[names_[id]]; }

const std::string& TrainerBook::NameOf(sync::TrainerId id) const {
  static const std::string* const kUnknown = new std::string();
  auto it = names_.find(id);
  return it == names_.end() ? *kUnknown : it->second;
}

void TrainerBook::Depart(sync::TrainerId id, const std::string& state, const std::string& reason) {
  const std::string& name = names_[id];
  v1::TrainerStatus& status = records_[name];
  status.set_state(state);
  if (state == "evicted") {
    status.set_evictions(status.evictions() + 1);
    status.set_eviction_reason(reason);
  }
  departed_.push_back(name);
  while (departed_.size() > departed_kept_) {
    auto old = records_.find(departed_.front());
    if (old != records_.end() && old->second.state() != "live") records_.erase(old);
    departed_.pop_front();
  }
}

void TrainerBook::SetTimings(sync::TrainerId id, const v1::TrainerTimings& timings) {
  v1::TrainerStatus& status = Of(id);
  *status.mutable_timings() = timings;
  status.set_compute_time_ratio(
      timings.wall_seconds() > 0 ? timings.compute_seconds() / timings.wall_seconds() : 0);
}

}  // namespace syncopate::coordinator
