// A peer-to-peer data plane without a network, for unit tests of the protocol and the session
// (peer_link.h). Peers' models arrive when the test deposits them into `inbox`, a real
// ExchangeInbox on the test's clock, so what an exchange takes follows the real rules; an
// exchange that waits for a model waits on that clock, until the test deposits it or moves the
// clock to the deadline (base::FakeClock::AwaitWaiters tells when it waits). Sends and multicasts
// are recorded and answered as the test says.
#ifndef SYNCOPATE_CLIENT_FAKE_PEER_LINK_H_
#define SYNCOPATE_CLIENT_FAKE_PEER_LINK_H_

#include <atomic>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "client/peer_exchange.h"
#include "client/peer_link.h"

namespace syncopate::client {

class FakePeerLink final : public PeerLink {
 public:
  // A model sent, by SendToAll (`multicast` false) or StartMulticast.
  struct Sent {
    uint64_t to = 0;
    int64_t round = 0;
    tensor::TensorMap model;
    double mass = 0;
    bool multicast = false;
  };

  explicit FakePeerLink(const base::Clock& clock)
      : inbox(ExchangeInbox::kMaxPendingPerSender, ExchangeInbox::kMaxPending, clock) {}

  // The answer to each send to `trainer_id` (default: OK).
  void FailSendsTo(uint64_t trainer_id, absl::Status status) {
    absl::MutexLock lock(&mu_);
    failures_[trainer_id] = std::move(status);
  }
  // The mass the next StartMulticast keeps (default: none).
  void KeepOnNextMulticast(double kept) {
    absl::MutexLock lock(&mu_);
    kept_.push_back(kept);
  }
  // What was sent so far, in order.
  std::vector<Sent> sent() {
    absl::MutexLock lock(&mu_);
    return sent_;
  }

  void SetIncarnation(uint64_t incarnation) override { inbox.SetIncarnation(incarnation); }
  void SetCodec(v1::Codec codec) override { this->codec = codec; }
  void PlanRound(const v1::PeerExchange& exchange) override { inbox.PlanRound(exchange); }
  std::vector<absl::Status> SendToAll(const std::vector<v1::PeerRef>& peers, uint64_t,
                                      int64_t round, const tensor::SharedTensorMap& model,
                                      double mass, absl::Time) override {
    std::vector<absl::Status> results;
    absl::MutexLock lock(&mu_);
    for (const v1::PeerRef& peer : peers) {
      auto failure = failures_.find(peer.trainer_id());
      results.push_back(failure == failures_.end() ? absl::OkStatus() : failure->second);
      sent_.push_back({peer.trainer_id(), round, *model, mass, false});
      if (results.back().ok()) ++totals_.transfers;
    }
    return results;
  }
  std::map<uint64_t, PeerModel> Collect(int64_t round, const std::vector<uint64_t>& senders,
                                        absl::Time deadline) override {
    return inbox.Collect(round, senders, deadline);
  }
  void NamePeers(const v1::PeerExchange& exchange) override { inbox.NamePeers(exchange); }
  std::map<uint64_t, PeerModel> TakeLatest(absl::Time wait_until) override {
    return inbox.TakeLatest(wait_until);
  }
  double StartMulticast(const std::vector<v1::PeerRef>& peers, uint64_t, int64_t round,
                        tensor::TensorMap model, double mass, absl::Time) override {
    absl::MutexLock lock(&mu_);
    for (const v1::PeerRef& peer : peers) {
      sent_.push_back({peer.trainer_id(), round, model, mass, true});
      ++outcomes_.delivered;
    }
    if (kept_.empty()) return 0;
    const double kept = kept_.front();
    kept_.pop_front();
    return kept;
  }
  MulticastOutcomes TakeMulticastOutcomes() override {
    absl::MutexLock lock(&mu_);
    return std::exchange(outcomes_, {});
  }
  TransferTotals TakeSent() override {
    absl::MutexLock lock(&mu_);
    return std::exchange(totals_, {});
  }
  TransferTotals TakeReceived() override { return {}; }

  ExchangeInbox inbox;
  std::atomic<v1::Codec> codec{v1::CODEC_NONE};  // the last SetCodec's

 private:
  absl::Mutex mu_;
  std::map<uint64_t, absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  std::deque<double> kept_ ABSL_GUARDED_BY(mu_);
  std::vector<Sent> sent_ ABSL_GUARDED_BY(mu_);
  MulticastOutcomes outcomes_ ABSL_GUARDED_BY(mu_);
  TransferTotals totals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_FAKE_PEER_LINK_H_
