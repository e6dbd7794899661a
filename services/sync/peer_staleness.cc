#include "sync/peer_staleness.h"

#include <algorithm>

namespace syncopate::sync {

PeerStaleness::Trainer& PeerStaleness::At(TrainerId id) {
  if (trainers_.size() < id) trainers_.resize(id);
  return trainers_[id - 1];
}

PeerStaleness::Trainer* PeerStaleness::Find(TrainerId id) {
  return id >= 1 && id <= trainers_.size() ? &trainers_[id - 1] : nullptr;
}

int64_t PeerStaleness::Held(const Holds& model, size_t j) const {
  const int64_t start = trainers_[j].start;
  return j < model.size() ? std::max(model[j], start) : start;
}

void PeerStaleness::Joined(TrainerId trainer, int64_t start) {
  Trainer& t = At(trainer);
  t = Trainer{};
  t.start = start;
  t.clock = start;
}

void PeerStaleness::Merge(Holds& into, const Holds& model) {
  if (into.size() < model.size()) into.resize(model.size(), 0);
  for (size_t j = 0; j < model.size(); ++j) into[j] = std::max(into[j], model[j]);
}

void PeerStaleness::Averaged(TrainerId trainer, const std::vector<TrainerId>& senders) {
  Trainer& t = At(trainer);
  for (TrainerId id : senders) {
    const Trainer* sender = id == trainer ? nullptr : Find(id);
    if (sender != nullptr && sender->sent) Merge(t.holds, *sender->sent);
  }
}

void PeerStaleness::Sent(TrainerId sender, const std::vector<TrainerId>& receivers,
                         absl::Time arrives) {
  const Trainer* from = Find(sender);
  if (from == nullptr || !from->sent) return;
  for (TrainerId id : receivers) {
    Trainer* to = id == sender ? nullptr : Find(id);
    if (to != nullptr) to->inbox.emplace(arrives, from->sent);
  }
}

void PeerStaleness::Received(TrainerId trainer, absl::Time now) {
  Trainer& t = At(trainer);
  const auto arrived = t.inbox.upper_bound(now);
  for (auto it = t.inbox.begin(); it != arrived; ++it) Merge(t.holds, *it->second);
  t.inbox.erase(t.inbox.begin(), arrived);
}

void PeerStaleness::Stepped(TrainerId trainer, int64_t clock) {
  const size_t self = trainer - 1;
  Trainer& t = At(trainer);
  int64_t missed = 0;
  for (size_t j = 0; j < trainers_.size(); ++j) {
    if (j != self) missed += std::max<int64_t>(0, trainers_[j].clock - Held(t.holds, j));
  }
  t.clock = clock;
  if (t.holds.size() <= self) t.holds.resize(self + 1, 0);
  t.holds[self] = clock;
  t.sent = std::make_shared<const Holds>(t.holds);
  missed_.Add(missed);
}

}  // namespace syncopate::sync
