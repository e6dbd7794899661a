// Deadlines on a server's streams: a stream that neither received nor sent a message for a while
// is cancelled, so that a client cannot hold a stream (its buffers, and a place under the
// per-connection stream limit) by opening it and going quiet (docs/security.md, "Limits"). And
// the end of the long-lived ones when the server stops: a stream idle between two operations
// (docs/transport.md) is cancelled then, so that the server's shutdown need not wait for it.
#ifndef SYNCOPATE_RPC_STREAM_WATCHDOG_H_
#define SYNCOPATE_RPC_STREAM_WATCHDOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "grpcpp/server_context.h"

namespace syncopate::rpc {

// Thread-safe. A reactor Watches its stream when it starts, Touches it at every message read or
// written, and Forgets it before it is deleted (OnDone); `cancel` is never called after Forget
// returns. A stream is busy (in the middle of an operation) from Watch on; a long-lived one says
// when it is idle between two operations (SetBusy).
class StreamWatchdog {
 public:
  using Id = uint64_t;

  // `idle`: how quiet a stream may be; zero or infinite never cancels. `on_cancel` (may be null)
  // is called once per stream cancelled, for a metric.
  StreamWatchdog(absl::Duration idle, const base::Clock& clock,
                 std::function<void()> on_cancel = nullptr);
  // Stops the sweeping thread, if started.
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  // Sweeps (CancelIdle) on a thread of its own, every quarter of `idle` (but at least every
  // second, and at most every 10 ms), until destroyed. Does nothing when `idle` never cancels.
  void Start();

  // `cancel` ends the stream (ServerContext::TryCancel); it is called with the watchdog's lock
  // held, so it must not call back into the watchdog.
  Id Watch(std::function<void()> cancel);
  void Touch(Id id);
  void Forget(Id id);
  // Whether the stream is in the middle of an operation; once the watchdog drains, a stream
  // said idle is cancelled at once.
  void SetBusy(Id id, bool busy);

  // Cancels every stream quiet for `idle` or longer now, once each; returns how many. Does
  // nothing when `idle` never cancels.
  int CancelIdle();
  // The server stops: every stream idle between two operations is cancelled now, and every other
  // one as soon as it is said idle. Returns how many were cancelled now.
  int Drain();

  absl::Duration idle() const { return idle_; }
  // Whether it ever cancels (`idle` neither zero nor infinite).
  bool Enabled() const;

 private:
  struct Stream {
    std::function<void()> cancel;
    absl::Time last_active;
    bool busy = true;
    bool cancelled = false;
  };
  // Cancels `stream` once.
  static void CancelOnce(Stream& stream);

  const absl::Duration idle_;
  const base::Clock& clock_;
  const std::function<void()> on_cancel_;
  absl::Mutex mu_;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Id, Stream> streams_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;
};

// One stream's registration, held by its reactor: watched from construction (when given a
// watchdog) to destruction. Touch at every message read or written, and when a pause of the
// server's own ends.
class WatchedStream {
 public:
  WatchedStream(StreamWatchdog* watchdog, grpc::ServerContextBase* context);
  ~WatchedStream();
  WatchedStream(const WatchedStream&) = delete;
  WatchedStream& operator=(const WatchedStream&) = delete;

  void Touch();
  void SetBusy(bool busy);
  // Stops watching before the stream ends (it has another deadline from now on).
  void Stop();

 private:
  StreamWatchdog* watchdog_;  // null: not watched
  const StreamWatchdog::Id id_;
};

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_STREAM_WATCHDOG_H_
