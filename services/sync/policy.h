// The sync policy interface. A policy turns events (a trainer joined, reported a clock, left; time
// passed) into decisions (which rounds close, which trainers may proceed and what they pull). It
// owns no threads, sockets or clocks: the coordinator and the simulator feed it the same events.
#ifndef SYNCOPATE_SYNC_POLICY_H_
#define SYNCOPATE_SYNC_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/clock_table.h"

namespace syncopate::sync {

// What a granted trainer pulls before its next iteration.
struct PullSpec {
  enum class Kind { kLive, kRound };
  Kind kind = Kind::kLive;
  int64_t round = 0;  // for kRound

  static PullSpec Live() { return {Kind::kLive, 0}; }
  static PullSpec Round(int64_t r) { return {Kind::kRound, r}; }
  bool operator==(const PullSpec& o) const { return kind == o.kind && round == o.round; }
};

// Permission for `trainer`, now at `clock`, to compute iteration clock + 1.
struct Grant {
  TrainerId trainer = 0;
  int64_t clock = 0;
  PullSpec pull;
  // The bound in force when granted (0 for BSP, -1 for none).
  int64_t staleness_bound = -1;
};

// Decisions to carry out in order: first close the rounds (on every store shard), then send the
// grants (some pull those rounds).
struct Decisions {
  std::vector<int64_t> close_rounds;
  std::vector<Grant> grants;

  bool empty() const { return close_rounds.empty() && grants.empty(); }
  void Append(Decisions other);
};

// Push semantics the trainers must use under a policy.
enum class PushMode {
  kImmediate,  // the store applies each delta at once with the trainer's weight
  kRound,      // the delta joins its round; the round's mean is applied when the round closes
};

// Not thread-safe: the caller serialises events.
class SyncPolicy {
 public:
  virtual ~SyncPolicy() = default;

  virtual std::string name() const = 0;
  virtual PushMode push_mode() const = 0;
  // The current staleness bound (-1: unbounded).
  virtual int64_t staleness_bound() const = 0;

  // A trainer joined. It starts at the returned clock; its first grant comes in some Decisions,
  // possibly later. FAILED_PRECONDITION if it is already a member.
  virtual absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now,
                                         Decisions* decisions) = 0;

  // The trainer finished and pushed iteration `clock`, and waits for a grant. Every report gets
  // exactly one grant unless the trainer leaves first. FAILED_PRECONDITION for an unknown trainer,
  // one that already waits, or a clock that is not its previous clock + 1.
  virtual absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) = 0;

  // The trainer left or was evicted; waiters blocked on it are re-evaluated. Unknown: no-op.
  virtual Decisions OnLeave(TrainerId trainer, absl::Time now) = 0;

  // Time passed (for time-based rules such as the start timeout).
  virtual Decisions OnTick(absl::Time now) = 0;

  // Clock of a member; nullopt if unknown.
  virtual std::optional<int64_t> ClockOf(TrainerId trainer) const = 0;
  // Minimum clock over members; nullopt when there are none.
  virtual std::optional<int64_t> MinClock() const = 0;
  // Rounds closed so far (round snapshots only; 0 otherwise).
  virtual int64_t last_closed_round() const = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_H_
