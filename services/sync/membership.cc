#include "sync/membership.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

absl::StatusOr<JoinResult> Membership::Join(const std::string& name, uint32_t rank,
                                            absl::Time now) {
  if (name.empty()) return absl::InvalidArgumentError("join without a trainer name");
  auto [it, inserted] = ids_by_name_.try_emplace(name, next_id_);
  if (inserted) ++next_id_;
  const TrainerId id = it->second;
  JoinResult result;
  if (auto old = live_.find(id); old != live_.end()) {
    result.replaced = old->second;
    live_.erase(old);
  }
  const uint64_t incarnation = ++last_incarnation_[id];
  result.member = Member{id, incarnation, name, rank, now};
  live_[id] = result.member;
  return result;
}

absl::StatusOr<Member> Membership::Restore(TrainerId id, uint64_t incarnation,
                                           const std::string& name, uint32_t rank, absl::Time now) {
  if (name.empty()) return absl::InvalidArgumentError("resume without a trainer name");
  if (id == 0 || incarnation == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' resumes without an id and incarnation"));
  }
  if (ids_by_name_.contains(name) || last_incarnation_.contains(id)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", name, "' (id ", id, ") cannot resume: that name or id is already in the job"));
  }
  ids_by_name_[name] = id;
  last_incarnation_[id] = incarnation;
  ReserveIds(id);
  Member member{id, incarnation, name, rank, now};
  live_[id] = member;
  return member;
}

absl::Status Membership::CheckLive(TrainerId id, uint64_t incarnation) const {
  if (!last_incarnation_.contains(id)) {
    return absl::UnauthenticatedError(absl::StrCat("unknown trainer id ", id));
  }
  auto it = live_.find(id);
  if (it == live_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", id, " has left or was evicted"));
  }
  if (it->second.incarnation != incarnation) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", id, " incarnation ", incarnation,
                                                      " is stale (live: ", it->second.incarnation,
                                                      ")"));
  }
  return absl::OkStatus();
}

absl::Status Membership::Touch(TrainerId id, uint64_t incarnation, absl::Time now) {
  absl::Status status = CheckLive(id, incarnation);
  if (status.ok()) live_[id].last_seen = now;
  return status;
}

absl::Status Membership::Remove(TrainerId id, uint64_t incarnation) {
  absl::Status status = CheckLive(id, incarnation);
  if (status.ok()) live_.erase(id);
  return status;
}

void Membership::Excuse(absl::Time since, absl::Duration gap) {
  for (auto& [id, m] : live_) m.last_seen = ExcusedTime(m.last_seen, since, gap);
}

std::vector<Member> Membership::Expired(absl::Time now, absl::Duration timeout) const {
  std::vector<Member> expired;
  for (const auto& [id, m] : live_) {
    if (now - m.last_seen > timeout) expired.push_back(m);
  }
  std::sort(expired.begin(), expired.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  return expired;
}

std::vector<Member> Membership::Live() const {
  std::vector<Member> members;
  for (const auto& [id, m] : live_) members.push_back(m);
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  return members;
}

uint64_t Membership::LastIncarnation(TrainerId id) const {
  auto it = last_incarnation_.find(id);
  return it == last_incarnation_.end() ? 0 : it->second;
}

std::optional<Member> Membership::Find(TrainerId id) const {
  auto it = live_.find(id);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

std::optional<Member> Membership::FindByName(const std::string& name) const {
  auto id = ids_by_name_.find(name);
  return id == ids_by_name_.end() ? std::nullopt : Find(id->second);
}

}  // namespace syncopate::sync
