// A trainer's membership of a job with the real transports: what a program (the built-in trainer,
// a Python script through the binding) needs around a Session. It serves the trainer's metrics,
// starts its end of the peer-to-peer data plane, joins the coordinator, connects to the store
// shards, writes the ready file and the trace, and keeps them for the session's life.
#ifndef SYNCOPATE_CLIENT_JOB_CLIENT_H_
#define SYNCOPATE_CLIENT_JOB_CLIENT_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/parameters.h"
#include "client/peer_node.h"
#include "client/session.h"
#include "client/session_client.h"
#include "client/store_client.h"
#include "client/trace_writer.h"
#include "client/trainer_metrics.h"
#include "metrics/metrics_server.h"

namespace syncopate::client {

struct JobOptions {
  std::string coordinator;  // host:port
  std::string name;         // stable trainer name; a rejoin under it replaces the old incarnation
  int rank = 0;             // reported to the coordinator (the trainer's data shard, say)
  absl::Duration join_timeout = absl::Seconds(30);
  absl::Duration rpc_timeout = absl::Seconds(30);  // each store RPC
  // Prometheus /metrics address ("127.0.0.1:0" picks a port); empty: no metrics server.
  std::string metrics_listen;
  // This trainer's certificate for every channel and its Peer service (rpc/credentials.h); default:
  // none (--insecure).
  rpc::Credentials credentials;
  PeerNodeOptions peer;  // its credentials and on_refusal are set from the above
  // The ports, once serving (base/ready_file.h); empty: none. JSON-lines trace; empty: none.
  std::string ready_file;
  std::string trace_file;
  SessionOptions session;
  // Asked while a finished Leave waits for a restarting coordinator: true gives that wait up
  // (SessionClientOptions::interrupted). Empty: it waits its full time.
  std::function<bool()> leave_interrupted;
};

// Not thread-safe, like the Session it holds.
class JobClient {
 public:
  // Joins the job with `parameters` as this trainer's model (they must outlive the client).
  // INVALID_ARGUMENT for bad options (a rate, a slowdown below 1, a timeout that is not positive,
  // an empty coordinator or name) or no parameters; the parameters' read error;
  // UNAVAILABLE when the coordinator cannot be reached within join_timeout; the coordinator's
  // refusal of the join as it is. Then call session().Start().
  static absl::StatusOr<std::unique_ptr<JobClient>> Join(JobOptions options,
                                                         Parameters& parameters);
  ~JobClient();  // closes the session (leaving the job), then the transports

  Session& session() { return *session_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

 private:
  JobClient() = default;

  std::unique_ptr<metrics::MetricsServer> metrics_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<TrainerMetrics> trainer_metrics_;
  std::unique_ptr<PeerNode> peers_;
  std::unique_ptr<SessionClient> coordinator_;
  std::unique_ptr<StoreClient> store_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<Session> session_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_JOB_CLIENT_H_
