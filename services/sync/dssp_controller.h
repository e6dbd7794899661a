// DSSP's synchronization controller (Zhao et al., ICDCS'19, Algorithm 2): how many extra
// iterations r* in [0, r_max] the fastest trainer may run beyond s_lo so that its next push lands
// as close as possible to one of the slowest trainer's next pushes.
#ifndef SYNCOPATE_SYNC_DSSP_CONTROLLER_H_
#define SYNCOPATE_SYNC_DSSP_CONTROLLER_H_

#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace syncopate::sync {

// A trainer's two latest push arrivals on the coordinator's monotonic clock.
struct PushTimes {
  std::optional<absl::Time> last;
  std::optional<absl::Time> previous;

  void Record(absl::Time t) {
    previous = last;
    last = t;
  }
  bool has_interval() const { return last && previous; }
  absl::Duration interval() const { return *last - *previous; }
};

// Predicts the fastest trainer's pushes at last + i*I_p (i = 0..r_max) and the slowest's at
// last + I_s + k*I_s (k = 0..r_max), and returns the r minimising min_k |slow[k] - fast[r]|; ties
// go to the smallest r. Cold start (either trainer has fewer than two pushes) or r_max <= 0: 0.
int64_t ChooseExtraIterations(const PushTimes& fastest, const PushTimes& slowest, int64_t r_max);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DSSP_CONTROLLER_H_
