// Holds a job's first grants until enough trainers joined, or until a timeout after the first
// join, so a run does not start with whoever happened to connect first.
#ifndef SYNCOPATE_SYNC_START_GATE_H_
#define SYNCOPATE_SYNC_START_GATE_H_

#include <cstddef>
#include <optional>

#include "absl/time/time.h"

namespace syncopate::sync {

class StartGate {
 public:
  StartGate(int min_trainers, absl::Duration timeout)
      : min_trainers_(min_trainers), timeout_(timeout) {}

  void NoteJoin(absl::Time now) {
    if (!first_join_) first_join_ = now;
  }
  // True once `members` reached the minimum or the timeout passed; stays open afterwards.
  bool Open(size_t members, absl::Time now) {
    if (!open_) {
      open_ = static_cast<int>(members) >= min_trainers_ ||
              (first_join_ && now - *first_join_ >= timeout_);
    }
    return open_;
  }

  // Whether Open has returned true.
  bool is_open() const { return open_; }

 private:
  int min_trainers_;
  absl::Duration timeout_;
  std::optional<absl::Time> first_join_;
  bool open_ = false;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_START_GATE_H_
