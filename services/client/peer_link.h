// The peer-to-peer data plane as the protocol (protocol.h) uses it, as an interface: the exchanges
// of the peer-to-peer modes send this trainer's model to peers and take the models peers sent.
// PeerNode (peer_node.h) implements it over gRPC; unit tests use FakePeerLink
// (fake_peer_link.h), which moves no bytes.
//
// Every deadline is a time of the clock the protocol runs on (base/clock.h), which is the clock
// the link was made with: base::MonotonicClock in a process, a base::FakeClock in unit tests.
#ifndef SYNCOPATE_CLIENT_PEER_LINK_H_
#define SYNCOPATE_CLIENT_PEER_LINK_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/peer_exchange.h"
#include "syncopate/v1/coordinator.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {

// What became of the background multicasts' transfers that ended since the last look.
struct MulticastOutcomes {
  int delivered = 0;
  int failed = 0;     // a dead or slow peer (the deadline), a refused stream
  int cancelled = 0;  // preempted or superseded
};

// Thread-safe.
class PeerLink {
 public:
  virtual ~PeerLink() = default;

  // This trainer's incarnation (its Welcome's): a model addressed to another one is refused.
  virtual void SetIncarnation(uint64_t incarnation) = 0;
  // How the models this trainer sends carry their values (its Welcome's codec, the job's
  // --compression): CODEC_NONE (float32, the default), CODEC_BF16 or CODEC_FP16 (each value the
  // nearest the codec holds).
  virtual void SetCodec(v1::Codec codec) = 0;

  // Exchanges in rounds (dssync, selmcast). Before the round's transfers: records the round's plan,
  // its senders and the names of its peers (ExchangeInbox::PlanRound).
  virtual void PlanRound(const v1::PeerExchange& exchange) = 0;
  // Sends `model`, carrying push-sum mass `mass` to each, as round `round` from `sender` to
  // every peer; each peer's outcome in order (PeerSender::SendToAll). The link may hold `model`
  // until its bytes are sent.
  virtual std::vector<absl::Status> SendToAll(const std::vector<v1::PeerRef>& peers,
                                              uint64_t sender, int64_t round,
                                              const tensor::SharedTensorMap& model, double mass,
                                              absl::Time deadline) = 0;
  // The models of round `round` from `senders` that arrived by `deadline`, or before every one of
  // them delivered or left (ExchangeInbox::Collect).
  virtual std::map<uint64_t, PeerModel> Collect(int64_t round, const std::vector<uint64_t>& senders,
                                                absl::Time deadline) = 0;

  // Exchanges in the background (selmcast-ssp, orpheus-ssp). Records the names of the peers
  // `exchange` names (ExchangeInbox::NamePeers).
  virtual void NamePeers(const v1::PeerExchange& exchange) = 0;
  // Every sender's newest model that arrived, with the mass of all its models that arrived;
  // waits until one arrived or until `wait_until` (ExchangeInbox::TakeLatest).
  virtual std::map<uint64_t, PeerModel> TakeLatest(absl::Time wait_until) = 0;
  // Starts sending `model` to `peers` in the background, each carrying `mass`, superseding the
  // earlier transfers to them; returns the mass not sent, which stays with this trainer
  // (BackgroundMulticast::Start).
  virtual double StartMulticast(const std::vector<v1::PeerRef>& peers, uint64_t from, int64_t round,
                                tensor::TensorMap model, double mass, absl::Time deadline) = 0;
  // What became of the multicasts' transfers since the last call.
  virtual MulticastOutcomes TakeMulticastOutcomes() = 0;

  // The completed model transfers in each direction since the last call (TransferMeter::Take).
  virtual TransferTotals TakeSent() = 0;
  virtual TransferTotals TakeReceived() = 0;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PEER_LINK_H_
