#include "client/peer_node.h"

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "rpc/grpc_util.h"

namespace syncopate::client {
namespace {

// A 64 KiB burst: a limit holds from the first chunk on.
constexpr double kBurstBytes = 64 * 1024;

absl::Status MakeBucket(const std::string& rate, std::optional<base::TokenBucket>* bucket) {
  if (rate.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(double bytes_per_second, base::ParseRate(rate));
  bucket->emplace(bytes_per_second, kBurstBytes, base::MonotonicClock::Get());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PeerNode>> PeerNode::Start(const PeerNodeOptions& options,
                                                          const tensor::TensorMap& shapes) {
  std::unique_ptr<PeerNode> node(new PeerNode(options));
  RETURN_IF_ERROR(MakeBucket(options.egress_rate, &node->egress_));
  RETURN_IF_ERROR(MakeBucket(options.ingress_rate, &node->ingress_));
  const LinkLimits limits = node->limits();
  node->watchdog_ = std::make_unique<rpc::StreamWatchdog>(options.stream_idle_timeout,
                                                          base::MonotonicClock::Get());
  node->watchdog_->Start();
  node->service_ = std::make_unique<PeerService>(
      node->inbox_, ShapeLookup(shapes), limits.ingress, node->received_,
      rpc::Authorizer(options.credentials, options.on_refusal), node->watchdog_.get());
  node->sender_ = std::make_unique<PeerSender>(limits.egress, node->sent_, options.credentials);
  node->sender_->SetTransport(options.transport);
  node->multicast_ = std::make_unique<BackgroundMulticast>(*node->sender_);
  int port = 0;
  RETURN_IF_ERROR(rpc::StartServer(options.listen, {node->service_.get()}, options.credentials,
                                   &node->server_, &port));
  node->address_ = options.advertise;
  if (node->address_.empty()) {
    std::string host = options.listen.substr(0, options.listen.rfind(':'));
    if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
    node->address_ = absl::StrCat(host, ":", port);
  }
  return node;
}

void PeerNode::HandleDirective(const v1::Directive& directive) {
  if (directive.has_peer_left()) {
    inbox_.MarkGone(directive.peer_left().trainer_id());
    sender_->PeerLeft(directive.peer_left().trainer_id());
  }
  if (directive.has_stop_sending()) {
    const v1::StopSending& stop = directive.stop_sending();
    multicast_->Stop(stop.round(), {stop.receivers().begin(), stop.receivers().end()});
  }
}

PeerNode::~PeerNode() {
  if (!server_) return;
  // Peers' streams idle between two models end now, the others as their model ends.
  watchdog_->Drain();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace syncopate::client
