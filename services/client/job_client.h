// A trainer's membership of a job with the real transports: what a program (the built-in trainer,
// a Python script through the binding) needs around a Session. It serves the trainer's metrics,
// starts its end of the peer-to-peer data plane, joins the coordinator, connects to the store
// shards, writes the ready file and the trace, and keeps them for the session's life.
#ifndef SYNCOPATE_CLIENT_JOB_CLIENT_H_
#define SYNCOPATE_CLIENT_JOB_CLIENT_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
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
  std::string name;         // stable trainer name; a rejoin under it gets a new incarnation
  int rank = 0;             // reported to the coordinator (the trainer's data shard, say)
  absl::Duration join_timeout = absl::Seconds(30);
  absl::Duration rpc_timeout = absl::Seconds(30);  // each store RPC
  Transport store_transport = Transport::kStream;
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
  // A trainer that was evicted (it paused past the eviction timeout, its step stalled, a restarted
  // coordinator did not take its session back) rejoins the job under a new incarnation, with the
  // job's current model, at most this many times in its life; then the eviction is its error.
  int max_rejoins = 3;
};

// Start, Step, session() and rejoins() from one thread (the training loop's); Stop from any.
class JobClient {
 public:
  // Joins the job with `parameters` as this trainer's model (they must outlive the client).
  // INVALID_ARGUMENT for bad options (a rate, a slowdown below 1, a timeout that is not positive,
  // an empty coordinator or name, max_rejoins below 0) or no parameters; the parameters' read
  // error; UNAVAILABLE when the coordinator cannot be reached within join_timeout; the
  // coordinator's refusal of the join as it is. Then call Start.
  static absl::StatusOr<std::unique_ptr<JobClient>> Join(JobOptions options,
                                                         Parameters& parameters);
  ~JobClient();  // closes the session (leaving the job), then the transports

  // The session's Start and Step (client/session.h), rejoining the job when this trainer was
  // evicted: its session is then replaced by one under a new incarnation, which loads the job's
  // current model into the parameters, and Step returns true (the loop goes on), at most
  // max_rejoins times; each rejoin is logged and counted (syncopate_trainer_rejoins_total). An
  // eviction because the job failed, one after Stop, or a rejoin that fails is the error.
  absl::Status Start();
  absl::StatusOr<bool> Step(float loss);
  // The current session's Stop; no rejoin after it. Thread-safe.
  void Stop();
  // Session::SetPaused, kept for the session a rejoin makes. Thread-safe.
  void SetPaused(bool paused);
  // Runs `call` on the current session, which a rejoin (inside Step, on the training loop's
  // thread) cannot replace meanwhile: for the session's thread-safe members (ReportAccuracy,
  // evaluation_due, Timings, world) from other threads. Thread-safe.
  template <typename F>
  auto WithSession(F call) {
    absl::MutexLock lock(&session_mu_);
    return call(*session_);
  }

  // The current session: another one after a rejoin. The training loop's thread only.
  Session& session() { return *session_; }
  int rejoins() const { return rejoins_; }
  // Steps over every session (a rejoin's new session goes on counting toward max_steps).
  int64_t steps() const { return steps_before_ + session_->steps(); }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

 private:
  JobClient() = default;
  // Joins the coordinator under the options' name and makes the store client and the session.
  absl::Status Connect();
  // After an eviction (`evicted`): leaves the old session and Connects again, under a new
  // incarnation. OK when rejoined; `evicted` itself when no rejoin is due.
  absl::Status Rejoin(const absl::Status& evicted);
  // Whether `status` is an eviction a rejoin can answer.
  bool RejoinDue(const absl::Status& status) const;

  JobOptions options_;
  Parameters* parameters_ = nullptr;
  int rejoins_ = 0;
  int64_t steps_before_ = 0;  // taken in the sessions before the current one
  std::atomic<bool> stopped_{false};
  // Guards the replacement of session_ against Stop from another thread.
  absl::Mutex session_mu_;
  // Declared through SetPaused: carried over to a rejoined session.
  bool paused_ ABSL_GUARDED_BY(session_mu_) = false;

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
