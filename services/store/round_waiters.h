// Pulls of a round this shard has not closed yet, parked until it closes. With pipelined grants
// the coordinator tells trainers to pull a round while it is still closing it on the shards
// (docs/faults.md, "Pipelined grants"), so a pull may arrive a moment before its round: it waits
// here instead of being refused. gRPC-free; the clock is injected.
#ifndef SYNCOPATE_STORE_ROUND_WAITERS_H_
#define SYNCOPATE_STORE_ROUND_WAITERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace syncopate::store {

// Thread-safe. Every parked pull is woken exactly once, outside the registry's lock: OK when a
// round at or past its own closes (Closed), UNAVAILABLE when its deadline passes first (Expire)
// or the shard stops (Stop). A pull withdrawn first (its call was cancelled) is never woken.
class RoundWaiters {
 public:
  // Names a parked pull (its reactor, say): unique among those parked.
  using Ticket = const void*;
  using Wake = std::function<void(const absl::Status&)>;

  struct Options {
    // How long a pull waits for its round (at most; never past its caller's own deadline). Zero:
    // nothing is parked, and a pull of a round not closed is refused at once, as before.
    absl::Duration max_wait = absl::Seconds(5);
    // A round further past the last closed one is refused at once (FAILED_PRECONDITION): no grant
    // names a round the coordinator is not closing, so that is a confused caller.
    int64_t max_rounds_ahead = 16;
    // More parked pulls are refused RESOURCE_EXHAUSTED (the caller retries with backoff).
    size_t max_parked = 4096;
  };

  RoundWaiters(Options options, const base::Clock& clock);
  // Stops (wakes every parked pull with UNAVAILABLE) and joins the sweeping thread.
  ~RoundWaiters();
  RoundWaiters(const RoundWaiters&) = delete;
  RoundWaiters& operator=(const RoundWaiters&) = delete;

  // Parks the pull `ticket` of `round` for up to `patience` (cut to options.max_wait), checking
  // first, under this registry's lock, whether `last_closed()` already reached it: a close cannot
  // slip between that check and the park, provided every close is followed by Closed(). True when
  // parked (`wake` is kept and runs later, on the thread that closes or expires it); false when
  // the round is closed already (serve it now; `wake` is dropped); FAILED_PRECONDITION when
  // parking is off or the round is more than options.max_rounds_ahead past the last closed one;
  // RESOURCE_EXHAUSTED when options.max_parked pulls are parked; UNAVAILABLE once stopped;
  // INVALID_ARGUMENT for a ticket parked already.
  absl::StatusOr<bool> Park(Ticket ticket, int64_t round, absl::Duration patience,
                            const std::function<int64_t()>& last_closed, Wake wake);
  // Rounds up to `round` are closed: wakes their pulls with OK.
  void Closed(int64_t round);
  // Wakes every pull whose deadline has passed with UNAVAILABLE; returns how many.
  int Expire();
  // The pull's call ended (cancelled): forgets it. False when it is not parked (being woken, woken
  // already, or never parked): its wake runs or ran, if any.
  bool Withdraw(Ticket ticket);
  // Wakes every parked pull with UNAVAILABLE, and parks no more.
  void Stop();

  // Expires on a thread of its own, every 50 ms of real time while pulls are parked (so a pull
  // waits its time, or up to 50 ms more), until stopped. Does nothing when parking is off.
  void Start();

  size_t parked() const;
  const Options& options() const { return options_; }

 private:
  struct Parked {
    int64_t round;
    absl::Time deadline;
    Wake wake;
  };
  // Takes the parked pulls `taken` selects out of the registry (they are this caller's to wake).
  std::map<Ticket, Parked> TakeIf(const std::function<bool(const Parked&)>& taken);
  // Wakes `woken` with `status`, outside the lock.
  static void WakeAll(std::map<Ticket, Parked>& woken, const absl::Status& status);

  const Options options_;
  const base::Clock& clock_;
  mutable absl::Mutex mu_;
  std::map<Ticket, Parked> parked_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_ROUND_WAITERS_H_
