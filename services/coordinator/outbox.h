// The directives waiting to be written to one trainer's session stream.
#ifndef SYNCOPATE_COORDINATOR_OUTBOX_H_
#define SYNCOPATE_COORDINATOR_OUTBOX_H_

#include <deque>
#include <functional>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::coordinator {

// Thread-safe FIFO between the coordinator (producer) and the stream's writer (consumer). The
// writer either waits in Pop, or is woken by a listener and takes directives with TryPop.
class Outbox {
 public:
  // Runs after every Send and after Close, on the caller's thread, with no lock of the outbox
  // held (it may call TryPop). It must not block: the coordinator sends under its own lock.
  using Listener = std::function<void()>;

  // Queues a directive; dropped after Close.
  void Send(v1::Directive directive);
  // No more directives will be queued; Pop drains what is left, then reports closed.
  void Close();
  // Waits up to `timeout` for a directive. Returns true with one, false on timeout or when closed
  // and empty (check closed()).
  bool Pop(v1::Directive* directive, absl::Duration timeout);
  // Pop without waiting.
  bool TryPop(v1::Directive* directive);
  bool closed() const;
  // Replaces the listener (null: none). Once it returns, the old listener is not running and will
  // not run again, so whatever it refers to may go.
  void SetListener(Listener listener);

 private:
  // Calls the listener (if any) with listener_mu_ held, so that SetListener can wait for it.
  void Notify();

  mutable absl::Mutex mu_;
  std::deque<v1::Directive> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Taken before mu_ when both are (TryPop from inside the listener).
  absl::Mutex listener_mu_;
  Listener listener_ ABSL_GUARDED_BY(listener_mu_);
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_OUTBOX_H_
