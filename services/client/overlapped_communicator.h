// The communication thread of the overlapped modes (wbsp-overlap): it pushes the deltas the session
// hands it, reports them, waits for the next grant and pulls the model it names, while the
// caller's training loop keeps stepping. It never touches the caller's parameters: the session
// takes each delta and applies each pulled model between two of the caller's steps, on the
// caller's thread, so the caller's forward and backward passes never race with a rebase.
#ifndef SYNCOPATE_CLIENT_OVERLAPPED_COMMUNICATOR_H_
#define SYNCOPATE_CLIENT_OVERLAPPED_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/protocol.h"

namespace syncopate::client {

// Thread-safe.
class OverlappedCommunicator {
 public:
  // A pulled model and the latest clock of this trainer's pushes it holds (-1: none).
  struct Pulled {
    PulledModel model;
    int64_t includes_clock = -1;
  };

  // Starts the thread, idle, after the grant of clock `clock` (whose model the session has
  // loaded). `protocol` must outlive this and is used by this thread only, until Halt. The thread
  // ends early when `stopping` returns true during a wait.
  OverlappedCommunicator(Protocol& protocol, int64_t clock, std::function<bool()> stopping);
  ~OverlappedCommunicator();  // Halt()

  // True while the thread waits for a delta: it has delivered the last grant's model.
  bool idle() const;
  // The clock the next delta is pushed as.
  int64_t next_clock() const;
  // Hands over the delta to push next (with the loss to report). Precondition: idle().
  void Send(tensor::SharedTensorMap delta, float loss);
  // The model the latest grant named, once.
  std::optional<Pulled> TakePulled();
  // How the thread ended: nullopt while it runs; OK when training is done or it stopped; the error
  // that ended it otherwise (an eviction, a coordinator or store that is gone, a refused push).
  std::optional<absl::Status> ended() const;
  // Waits up to `timeout` until the thread is idle or has ended; false on timeout.
  bool AwaitIdleOrEnded(absl::Duration timeout);
  // Stops the thread (a wait in progress ends within 200 ms) and joins it. Idempotent.
  void Halt();

 private:
  struct Outgoing {
    tensor::SharedTensorMap delta;
    float loss = 0;
  };
  void Run();
  // Pushes and reports `out`, awaits the next grant and pulls its model. False when there is no
  // next grant (training is done, or stopping).
  absl::StatusOr<bool> Cycle(const Outgoing& out);

  Protocol& protocol_;
  const std::function<bool()> stopping_;
  std::atomic<bool> halt_{false};

  mutable absl::Mutex mu_;
  int64_t clock_ ABSL_GUARDED_BY(mu_);  // of the latest grant
  bool idle_ ABSL_GUARDED_BY(mu_) = true;
  std::optional<Outgoing> outgoing_ ABSL_GUARDED_BY(mu_);
  std::optional<Pulled> pulled_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_OVERLAPPED_COMMUNICATOR_H_
