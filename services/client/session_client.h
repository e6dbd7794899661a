// The trainer's side of the control plane: one Session stream to the coordinator (join, clock
// reports, heartbeats on their own thread, leave) and the directives that come back.
#ifndef SYNCOPATE_CLIENT_SESSION_CLIENT_H_
#define SYNCOPATE_CLIENT_SESSION_CLIENT_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/backoff.h"
#include "client/links.h"
#include "rpc/credentials.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace syncopate::client {

struct SessionClientOptions {
  // How long Connect may take, retrying a coordinator that is starting (UNAVAILABLE).
  absl::Duration join_timeout = absl::Seconds(30);
  // When the stream breaks (the coordinator restarted, or the network): how long to keep trying
  // to resume the session, with backoff, before giving up.
  absl::Duration resume_for = absl::Minutes(2);
  base::BackoffOptions backoff{absl::Milliseconds(100), absl::Seconds(1), 2.0};
  // This trainer's certificate (default: none, --insecure).
  rpc::Credentials credentials;
  // Asked every 200 ms while a finished Leave waits for a resume: true gives the wait up (the
  // caller was interrupted). Other Leaves do not ask. May be empty.
  std::function<bool()> interrupted;
};

// Thread-safe. Rides out a coordinator restart: when the stream breaks, it opens a new one and
// joins again with Join.resume (the same id, incarnation and clock, and whether it awaits a
// grant), retrying with backoff; meanwhile reports and heartbeats are held back (the resume
// carries the clock), and WaitProceed waits. Directives of the old stream not yet taken are
// dropped (the new coordinator decides again).
class SessionClient final : public CoordinatorLink {
 public:
  // Opens the session, sends `join` and waits for the Welcome, retrying with backoff while the
  // coordinator cannot be reached or answers UNAVAILABLE (it is starting), within
  // options.join_timeout: then UNAVAILABLE. The coordinator's refusal of the join as it is.
  static absl::StatusOr<std::unique_ptr<SessionClient>> Connect(const std::string& address,
                                                                const v1::Join& join,
                                                                SessionClientOptions options = {});
  ~SessionClient();

  const v1::Welcome& welcome() const override { return welcome_; }

  // Waits up to `timeout` for the next Proceed. DEADLINE_EXCEEDED on timeout (the caller may wait
  // again, also while the session resumes); ABORTED when evicted, or when the coordinator refused
  // to resume the session; OUT_OF_RANGE when training is done (the coordinator's Done);
  // UNAVAILABLE when the session could not be resumed within options.resume_for.
  absl::StatusOr<v1::Proceed> WaitProceed(absl::Duration timeout) override;
  uint64_t directives_heard() const override { return heard_.load(); }

  // Sends the report, or keeps it for the resumed session while the stream is down. UNAVAILABLE
  // once the session is closed or lost.
  absl::Status ReportClock(const v1::ClockReport& report) override;
  // Peer-to-peer modes: `callback` runs (on the reading thread) for every PeerLeft and
  // StopSending directive from now on, instead of queueing it with the Proceeds.
  void OnPeerDirective(std::function<void(const v1::Directive&)> callback);
  // Sends heartbeats every welcome().heartbeat_interval_seconds with `timings()` until Close;
  // while a grant is awaited they say so, and the coordinator answers each (HeartbeatAck).
  void StartHeartbeats(std::function<v1::TrainerTimings()> timings) override;
  void SetPaused(bool paused) override;
  // Sends Leave and closes the stream once the coordinator ended it (or after a short deadline).
  // When the stream is broken, or breaks before the coordinator ended it, the resume sends the
  // Leave again on the resumed session; a `finished` Leave waits for that, up to
  // options.resume_for or until options.interrupted, any other for a short deadline. Idempotent.
  void Leave(const v1::Leave& leave, bool finished) override;

 private:
  using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::Directive>;
  // One Session stream and its context.
  struct Call {
    grpc::ClientContext ctx;
    std::unique_ptr<Stream> stream;
  };

  explicit SessionClient(SessionClientOptions options) : options_(options) {}
  // Opens a stream, sends `join` and reads its Welcome within `timeout`. UNAVAILABLE (retry) when
  // the coordinator cannot be reached, the stream breaks or the coordinator says so; its refusal
  // otherwise.
  absl::StatusOr<std::unique_ptr<Call>> Open(const v1::Join& join, absl::Duration timeout,
                                             v1::Welcome* welcome);
  absl::Status Write(const v1::SessionRequest& request);
  // A heartbeat with the timings and the trainer's state now.
  v1::SessionRequest HeartbeatRequest();
  // Reads directives; when the stream breaks without an eviction or Done, resumes the session.
  void ReadLoop();
  // Opens a stream with Join.resume, retrying with backoff within options_.resume_for. OK: the
  // session goes on in call_; otherwise why it is lost.
  absl::Status Resume();
  void Close();

  const SessionClientOptions options_;
  std::string address_;
  v1::Join join_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  v1::Welcome welcome_;

  // Writers (reports, heartbeats, leave) and the swap of a resumed stream.
  absl::Mutex write_mu_;
  std::unique_ptr<Call> call_ ABSL_GUARDED_BY(write_mu_);
  bool broken_ ABSL_GUARDED_BY(write_mu_) = false;  // call_ is dead; a resume is under way
  bool closed_ ABSL_GUARDED_BY(write_mu_) = false;
  std::optional<v1::SessionRequest> leave_ ABSL_GUARDED_BY(write_mu_);  // once Leave was called

  absl::Mutex mu_;
  std::deque<v1::Directive> directives_ ABSL_GUARDED_BY(mu_);
  std::function<void(const v1::Directive&)> on_peer_directive_ ABSL_GUARDED_BY(mu_);
  // The stream ended for good (Leave, eviction, Done, or a resume that failed with lost_).
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> lost_ ABSL_GUARDED_BY(mu_);
  bool final_directive_ ABSL_GUARDED_BY(mu_) = false;  // Evicted or Done arrived
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // What a resume tells the coordinator: the last clock reported (or granted), and whether a
  // grant for it is still awaited.
  int64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  bool awaiting_grant_ ABSL_GUARDED_BY(mu_) = true;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // What the heartbeats carry besides the timings; set by StartHeartbeats.
  std::function<v1::TrainerTimings()> timings_ ABSL_GUARDED_BY(mu_);

  std::atomic<uint64_t> heard_{0};  // directives read, of any kind

  std::thread reader_;
  std::thread heartbeat_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_SESSION_CLIENT_H_
