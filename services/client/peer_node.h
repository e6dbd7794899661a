// This trainer's end of the peer-to-peer data plane, started before it joins (the coordinator hands
// its address to the other trainers): the Peer service on its own port, the inbox it fills, the
// sender, the transfer meters, and the emulated link limits, which the trainer's store traffic
// shares.
#ifndef SYNCOPATE_CLIENT_PEER_NODE_H_
#define SYNCOPATE_CLIENT_PEER_NODE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/token_bucket.h"
#include "client/background_multicast.h"
#include "client/peer_exchange.h"
#include "client/peer_link.h"
#include "client/store_client.h"
#include "grpcpp/server.h"
#include "rpc/authorizer.h"
#include "rpc/credentials.h"
#include "rpc/stream_watchdog.h"
#include "tensor/tensor.h"

namespace syncopate::client {

struct PeerNodeOptions {
  std::string listen = "127.0.0.1:0";  // port 0 picks one
  // host:port the other trainers dial; empty: the listen address with its bound port (a wildcard
  // host read as 127.0.0.1).
  std::string advertise;
  // Link limits such as "100mbit" (base::ParseRate); empty: none.
  std::string egress_rate;
  std::string ingress_rate;
  // This trainer's certificate, for its Peer service and its channels to peers (default: none).
  rpc::Credentials credentials;
  // Counts an Exchange the Peer service refused by the caller's certificate (may be null).
  rpc::Authorizer::OnRefusal on_refusal;
  // An incoming model stream that sends nothing for this long is cancelled (zero: never).
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  // Peers' models that may wait for this trainer, per sender and in all (ExchangeInbox).
  int inbox_models_per_sender = ExchangeInbox::kMaxPendingPerSender;
  int inbox_models = ExchangeInbox::kMaxPending;
  // How this trainer's models travel to each peer (PeerSender::SetTransport).
  Transport transport = Transport::kStream;
};

// The peer-to-peer data plane over gRPC, as a session uses it (PeerLink). Its deadlines are times
// of base::MonotonicClock.
class PeerNode final : public PeerLink {
 public:
  // `shapes`: this trainer's model, whose tensors received models must match. INVALID_ARGUMENT
  // for a bad rate; the server's error when it cannot listen.
  static absl::StatusOr<std::unique_ptr<PeerNode>> Start(const PeerNodeOptions& options,
                                                         const tensor::TensorMap& shapes);
  ~PeerNode();  // stops the Peer service

  const std::string& address() const { return address_; }
  ExchangeInbox& inbox() { return inbox_; }
  // A peer directive from the coordinator: PeerLeft (the exchange stops waiting for that peer, and
  // stops sending to it) or
  // StopSending (the multicast's transfers to those receivers are preempted).
  void HandleDirective(const v1::Directive& directive);
  LinkLimits limits() { return {egress_ ? &*egress_ : nullptr, ingress_ ? &*ingress_ : nullptr}; }

  // PeerLink.
  void SetIncarnation(uint64_t incarnation) override { inbox_.SetIncarnation(incarnation); }
  void SetCodec(v1::Codec codec) override { sender_->SetCodec(codec); }
  void PlanRound(const v1::PeerExchange& exchange) override { inbox_.PlanRound(exchange); }
  std::vector<absl::Status> SendToAll(const std::vector<v1::PeerRef>& peers, uint64_t sender,
                                      int64_t round, const tensor::SharedTensorMap& model,
                                      double mass, absl::Time deadline) override {
    return sender_->SendToAll(peers, sender, round, model, mass, deadline);
  }
  std::map<uint64_t, PeerModel> Collect(int64_t round, const std::vector<uint64_t>& senders,
                                        absl::Time deadline) override {
    return inbox_.Collect(round, senders, deadline);
  }
  void NamePeers(const v1::PeerExchange& exchange) override { inbox_.NamePeers(exchange); }
  std::map<uint64_t, PeerModel> TakeLatest(absl::Time wait_until) override {
    return inbox_.TakeLatest(wait_until);
  }
  double StartMulticast(const std::vector<v1::PeerRef>& peers, uint64_t from, int64_t round,
                        tensor::TensorMap model, double mass, absl::Time deadline) override {
    return multicast_->Start(peers, from, round, std::move(model), mass, deadline);
  }
  MulticastOutcomes TakeMulticastOutcomes() override { return multicast_->Take(); }
  TransferTotals TakeSent() override { return sent_.Take(); }
  TransferTotals TakeReceived() override { return received_.Take(); }

 private:
  explicit PeerNode(const PeerNodeOptions& options)
      : inbox_(options.inbox_models_per_sender, options.inbox_models) {}

  std::unique_ptr<rpc::StreamWatchdog> watchdog_;  // outlives the server
  std::optional<base::TokenBucket> egress_;
  std::optional<base::TokenBucket> ingress_;
  ExchangeInbox inbox_;
  TransferMeter sent_;
  TransferMeter received_;
  std::unique_ptr<PeerService> service_;
  std::unique_ptr<PeerSender> sender_;
  std::unique_ptr<BackgroundMulticast> multicast_;  // uses sender_
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PEER_NODE_H_
