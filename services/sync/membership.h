// Who is in the job. A trainer is known by a stable name (its pod name); each join under that name
// is a new incarnation, so messages from a previous life of the same trainer can be told apart.
#ifndef SYNCOPATE_SYNC_MEMBERSHIP_H_
#define SYNCOPATE_SYNC_MEMBERSHIP_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/clock_table.h"

namespace syncopate::sync {

struct Member {
  TrainerId id = 0;
  uint64_t incarnation = 0;
  std::string name;
  uint32_t rank = 0;
  absl::Time last_seen;
};

struct JoinResult {
  Member member;
  // The previous incarnation of the same name, still live when it rejoined (a restarted pod that
  // was not yet evicted): the caller must treat it as departed.
  std::optional<Member> replaced;
};

// When a sign of life at `seen` counts from once the gap [since, since + gap] in which its keeper
// did not run is taken out (Membership::Excuse).
inline absl::Time ExcusedTime(absl::Time seen, absl::Time since, absl::Duration gap) {
  return seen <= since ? seen + gap : std::max(seen, since + gap);
}

// Not thread-safe; time is passed in.
class Membership {
 public:
  // Adds a trainer. A name seen before keeps its id and gets the next incarnation.
  // INVALID_ARGUMENT for an empty name.
  absl::StatusOr<JoinResult> Join(const std::string& name, uint32_t rank, absl::Time now);

  // Takes back, under its old id and incarnation, a trainer that was a member before this
  // membership was created (it resumes after a coordinator restart). INVALID_ARGUMENT for an empty
  // name or a zero id or incarnation; FAILED_PRECONDITION when the name or the id is known here.
  absl::StatusOr<Member> Restore(TrainerId id, uint64_t incarnation, const std::string& name,
                                 uint32_t rank, absl::Time now);
  // New names get ids above `id` (ids a job under way already uses).
  void ReserveIds(TrainerId id) { next_id_ = std::max(next_id_, id + 1); }

  // Records a sign of life. UNAUTHENTICATED for an unknown id, FAILED_PRECONDITION for a departed
  // trainer or a stale incarnation.
  absl::Status Touch(TrainerId id, uint64_t incarnation, absl::Time now);

  // Same checks as Touch, without recording anything.
  absl::Status CheckLive(TrainerId id, uint64_t incarnation) const;

  // Removes a live trainer (leave or eviction). Returns what Touch would for a bad id/incarnation.
  absl::Status Remove(TrainerId id, uint64_t incarnation);

  // The keeper of this membership did not run for `gap`, which began at `since` (its process was
  // frozen or starved): what trainers sent meanwhile may not have been read yet. A trainer's
  // silence counts only the time the keeper ran: one last seen before the gap gets `gap` added to
  // its last sign of life; one seen within it (just before a freeze took hold, or read by another
  // thread) counts from the gap's end.
  void Excuse(absl::Time since, absl::Duration gap);

  // Live trainers not seen for longer than `timeout`, in id order.
  std::vector<Member> Expired(absl::Time now, absl::Duration timeout) const;

  // Live trainers in id order.
  std::vector<Member> Live() const;
  size_t live_count() const { return live_.size(); }
  std::optional<Member> Find(TrainerId id) const;
  // The live trainer under `name`, if any.
  std::optional<Member> FindByName(const std::string& name) const;
  // The latest incarnation of a trainer, live or departed; 0 for an unknown id.
  uint64_t LastIncarnation(TrainerId id) const;

 private:
  absl::flat_hash_map<std::string, TrainerId> ids_by_name_;
  absl::flat_hash_map<TrainerId, uint64_t> last_incarnation_;
  absl::flat_hash_map<TrainerId, Member> live_;
  TrainerId next_id_ = 1;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_MEMBERSHIP_H_
