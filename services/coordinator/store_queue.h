// The coordinator's work for the store shards, in order, and how it is retried: the actions its
// policy's decisions imply (round closes, then directives and grants), whether the stores'
// membership is out of date, the backoff after a failed store call, and when to probe the shards
// next. Not thread-safe: the coordinator's lock guards it; its action thread makes the calls.
#ifndef SYNCOPATE_COORDINATOR_STORE_QUEUE_H_
#define SYNCOPATE_COORDINATOR_STORE_QUEUE_H_

#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "base/backoff.h"
#include "coordinator/outbox.h"
#include "sync/policy.h"
#include "syncopate/v1/coordinator.pb.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::coordinator {

// One step of work; its parts are carried out in this order.
struct Action {
  std::vector<v1::CloseRoundRequest> close_rounds;
  std::vector<sync::Grant> grants;
  // Directives for a specific session (welcome, peer left, stop sending, done), sent after the
  // rounds close (with the grants before, when pipelined) and before the grants.
  std::vector<std::pair<std::shared_ptr<Outbox>, v1::Directive>> sends;
  // Sent already, before its rounds closed (pipelined grants): not again when they have.
  bool delivered = false;
};

class StoreQueue {
 public:
  // The first probe is due at `first_probe`.
  StoreQueue(const base::BackoffOptions& backoff, absl::Time first_probe)
      : backoff_(backoff), next_probe_(first_probe) {}

  // Whether an action may go out at once: nothing queued or being sent before it, the stores'
  // membership current, no backoff.
  bool clear() const {
    return actions_.empty() && !membership_changed_ && !sending_membership_ && !backing_off_;
  }
  // Whether the action thread has something to send now.
  bool has_work() const { return !backing_off_ && (!actions_.empty() || membership_changed_); }
  bool empty() const { return actions_.empty(); }
  Action& front() { return actions_.front(); }
  void pop_front() { actions_.pop_front(); }
  void push_back(Action action) { actions_.push_back(std::move(action)); }

  // The membership the stores hold is out of date (a trainer came or went, a shard restarted, the
  // job's end began): it goes out before any other action.
  void MembershipChanged() { membership_changed_ = true; }
  bool membership_changed() const { return membership_changed_; }
  // The change is being sent: the queue holds back until MembershipSent.
  void SendingMembership() {
    membership_changed_ = false;
    sending_membership_ = true;
  }
  void MembershipSent() { sending_membership_ = false; }

  // A store call failed at `now`: everything waits out a backoff, and the membership goes out
  // again first (a shard that restarted needs it before anything else). True for the first
  // failure of an outage.
  bool Failed(absl::Time now);
  // A store call succeeded: the outage it ends, if any (how long, how many failed attempts).
  struct Outage {
    absl::Duration lasted;
    int failures = 0;
  };
  std::optional<Outage> Succeeded(absl::Time now);
  // Ends the backoff once its time came.
  void Tick(absl::Time now);
  bool backing_off() const { return backing_off_; }
  // Whether the stores are failing (since the first failure, until a call succeeds).
  bool failing() const { return failing_since_.has_value(); }

  // Whether a probe of the shards is due at `now` (never while backing off); if so, the next one
  // is due `interval` later.
  bool ProbeDue(absl::Time now, absl::Duration interval);

 private:
  std::deque<Action> actions_;
  bool membership_changed_ = false;
  bool sending_membership_ = false;
  base::Backoff backoff_;
  bool backing_off_ = false;
  absl::Time retry_at_;
  std::optional<absl::Time> failing_since_;
  absl::Time next_probe_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_STORE_QUEUE_H_
