#include "sync/dssp_controller.h"

#include <cmath>
#include <limits>

namespace syncopate::sync {

int64_t ChooseExtraIterations(const PushTimes& fastest, const PushTimes& slowest, int64_t r_max) {
  if (r_max <= 0 || !fastest.has_interval() || !slowest.has_interval()) return 0;
  const double fast0 = absl::ToUnixMicros(*fastest.last) * 1e-6;
  const double fast_step = absl::ToDoubleSeconds(fastest.interval());
  const double slow_step = absl::ToDoubleSeconds(slowest.interval());
  const double slow0 = absl::ToUnixMicros(*slowest.last) * 1e-6 + slow_step;
  int64_t best_r = 0;
  double best_gap = std::numeric_limits<double>::infinity();
  for (int64_t r = 0; r <= r_max; ++r) {
    const double fast = fast0 + static_cast<double>(r) * fast_step;
    for (int64_t k = 0; k <= r_max; ++k) {
      const double gap = std::fabs(slow0 + static_cast<double>(k) * slow_step - fast);
      // Clearly smaller (beyond rounding): ties keep the smaller r.
      if (gap < best_gap - 1e-9) {
        best_gap = gap;
        best_r = r;
      }
    }
  }
  return best_r;
}

}  // namespace syncopate::sync
