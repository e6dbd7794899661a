// The directives waiting to be written to one trainer's session stream.
#ifndef SYNCOPATE_COORDINATOR_OUTBOX_H_
#define SYNCOPATE_COORDINATOR_OUTBOX_H_

#include <deque>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::coordinator {

// Thread-safe FIFO between the coordinator (producer) and the stream's writer (consumer).
class Outbox {
 public:
  // Queues a directive; dropped after Close.
  void Send(v1::Directive directive);
  // No more directives will be queued; Pop drains what is left, then reports closed.
  void Close();
  // Waits up to `timeout` for a directive. Returns true with one, false on timeout or when closed
  // and empty (check closed()).
  bool Pop(v1::Directive* directive, absl::Duration timeout);
  bool closed() const;

 private:
  mutable absl::Mutex mu_;
  std::deque<v1::Directive> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_OUTBOX_H_
