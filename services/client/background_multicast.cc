#include "client/background_multicast.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace syncopate::client {
namespace {

constexpr size_t kMaxEarlyStopRounds = 16;

}  // namespace

BackgroundMulticast::~BackgroundMulticast() {
  std::vector<std::unique_ptr<Transfer>> transfers;
  {
    absl::MutexLock lock(&mu_);
    transfers.swap(transfers_);
  }
  Finish(transfers);
}

void BackgroundMulticast::Finish(std::vector<std::unique_ptr<Transfer>>& transfers) {
  for (auto& t : transfers) t->cancel.Cancel();
  for (auto& t : transfers) t->thread.join();
  transfers.clear();
}

double BackgroundMulticast::Start(const std::vector<v1::PeerRef>& peers, uint64_t from,
                                  int64_t round, tensor::TensorMap model, double mass,
                                  absl::Time deadline) {
  // Those this multicast supersedes are cancelled, without waiting for them to stop; those that
  // ended are joined (at once: their threads are done); the others go on.
  std::vector<std::unique_ptr<Transfer>> ended;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::unique_ptr<Transfer>> running;
    for (auto& t : transfers_) {
      if (t->ended) {
        ended.push_back(std::move(t));
        continue;
      }
      const bool superseded = std::any_of(peers.begin(), peers.end(), [&](const v1::PeerRef& peer) {
        return peer.trainer_id() == t->receiver;
      });
      if (superseded) t->cancel.Cancel();
      running.push_back(std::move(t));
    }
    transfers_.swap(running);
  }
  Finish(ended);
  const tensor::SharedTensorMap snapshot = tensor::Share(std::move(model));
  absl::MutexLock lock(&mu_);
  newest_round_ = std::max(newest_round_, round);
  std::set<uint64_t> stopped;
  if (auto it = early_stops_.find(round); it != early_stops_.end()) stopped = std::move(it->second);
  early_stops_.erase(early_stops_.begin(), early_stops_.upper_bound(round));
  double kept = 0;
  for (const v1::PeerRef& peer : peers) {
    if (stopped.count(peer.trainer_id()) > 0) {  // preempted before it started
      ++outcomes_.cancelled;
      kept += mass;
      continue;
    }
    const PeerSender::Booked booked = sender_.Book(peer, mass, /*unless_on_its_way=*/true);
    kept += mass - booked.share;
    auto transfer = std::make_unique<Transfer>();
    transfer->receiver = peer.trainer_id();
    transfer->round = round;
    Transfer* t = transfer.get();
    t->thread = std::thread([this, t, peer, from, round, snapshot, booked, deadline] {
      const absl::Status s =
          sender_.SendBooked(peer, from, round, snapshot, booked, deadline, &t->cancel);
      absl::MutexLock lock(&mu_);
      t->ended = true;
      if (s.ok()) {
        ++outcomes_.delivered;
        return;
      }
      if (t->cancel.cancelled()) {
        ++outcomes_.cancelled;
      } else {
        ++outcomes_.failed;
        spdlog::warn("round {}: {}", round, s.ToString());
      }
    });
    transfers_.push_back(std::move(transfer));
  }
  return kept;
}

void BackgroundMulticast::Stop(int64_t round, const std::vector<uint64_t>& receivers) {
  absl::MutexLock lock(&mu_);
  if (round > newest_round_) {
    early_stops_[round].insert(receivers.begin(), receivers.end());
    // Honest coordinators preempt a round or two ahead at most: the oldest go beyond that.
    while (early_stops_.size() > kMaxEarlyStopRounds) early_stops_.erase(early_stops_.begin());
    return;
  }
  for (auto& t : transfers_) {
    if (t->round == round &&
        std::find(receivers.begin(), receivers.end(), t->receiver) != receivers.end()) {
      t->cancel.Cancel();
    }
  }
}

BackgroundMulticast::Outcomes BackgroundMulticast::Take() {
  absl::MutexLock lock(&mu_);
  Outcomes out = outcomes_;
  outcomes_ = Outcomes{};
  return out;
}

}  // namespace syncopate::client
