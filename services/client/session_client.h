// The trainer's side of the control plane: one Session stream to the coordinator (join, clock
// reports, heartbeats on their own thread, leave) and the directives that come back.
#ifndef SYNCOPATE_CLIENT_SESSION_CLIENT_H_
#define SYNCOPATE_CLIENT_SESSION_CLIENT_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/links.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace syncopate::client {

// Thread-safe.
class SessionClient final : public CoordinatorLink {
 public:
  // Opens the session, sends `join` and waits up to `timeout` for the Welcome. UNAVAILABLE when the
  // coordinator cannot be reached; the coordinator's error when it refuses the join.
  static absl::StatusOr<std::unique_ptr<SessionClient>> Connect(const std::string& address,
                                                                const v1::Join& join,
                                                                absl::Duration timeout);
  ~SessionClient();

  const v1::Welcome& welcome() const override { return welcome_; }

  // Waits up to `timeout` for the next Proceed. DEADLINE_EXCEEDED on timeout (the caller may wait
  // again); ABORTED when evicted; OUT_OF_RANGE when training is done (the coordinator's Done);
  // UNAVAILABLE when the stream is gone.
  absl::StatusOr<v1::Proceed> WaitProceed(absl::Duration timeout) override;

  absl::Status ReportClock(const v1::ClockReport& report) override;
  // Peer-to-peer modes: `callback` runs (on the reading thread) for every PeerLeft and
  // StopSending directive from now on, instead of queueing it with the Proceeds.
  void OnPeerDirective(std::function<void(const v1::Directive&)> callback);
  // Sends heartbeats every welcome().heartbeat_interval_seconds with `timings()` until Close.
  void StartHeartbeats(std::function<v1::TrainerTimings()> timings) override;
  // Sends Leave and closes the stream (bounded by a short deadline). Idempotent.
  void Leave(const std::string& reason) override;

 private:
  SessionClient() = default;
  absl::Status Write(const v1::SessionRequest& request);
  void ReadLoop();
  void Close();

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::Directive>> stream_;
  v1::Welcome welcome_;

  absl::Mutex write_mu_;
  bool closed_ ABSL_GUARDED_BY(write_mu_) = false;

  absl::Mutex mu_;
  std::deque<v1::Directive> directives_ ABSL_GUARDED_BY(mu_);
  std::function<void(const v1::Directive&)> on_peer_directive_ ABSL_GUARDED_BY(mu_);
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread reader_;
  std::thread heartbeat_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_SESSION_CLIENT_H_
