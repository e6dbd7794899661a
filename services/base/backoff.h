// Capped exponential backoff with jitter, for retrying calls to a process that may be restarting:
// delays grow from `initial` by `multiplier` up to `max`, each drawn uniformly from the upper half
// of its step so that many clients retrying together spread out.
#ifndef SYNCOPATE_BASE_BACKOFF_H_
#define SYNCOPATE_BASE_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace syncopate::base {

struct BackoffOptions {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(2);
  double multiplier = 2.0;
};

// Not thread-safe: one retry loop owns it.
class Backoff {
 public:
  // Without a seed, each Backoff gets its own from a process-wide sequence seeded once (a
  // std::random_device per retry loop would cost a system call on every call site's hot path).
  explicit Backoff(BackoffOptions options = {}, uint64_t seed = NextSeed());

  // Distinct seeds for unseeded Backoffs; thread-safe.
  static uint64_t NextSeed();

  // The delay before the next attempt, after a failure: in [step/2, step], where step is
  // initial x multiplier^(failures so far), capped at max.
  absl::Duration Next();
  // After a success: the next failure starts again from `initial`.
  void Reset();
  // Failures since the last Reset.
  int failures() const { return failures_; }

 private:
  BackoffOptions options_;
  std::mt19937_64 random_;
  absl::Duration step_;
  int failures_ = 0;
};

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_BACKOFF_H_
