#include "base/backoff.h"

#include <algorithm>

namespace syncopate::base {

Backoff::Backoff(BackoffOptions options, uint64_t seed)
    : options_(options), random_(seed), step_(options.initial) {}

absl::Duration Backoff::Next() {
  const absl::Duration step = std::min(step_, options_.max);
  step_ = std::min(step * options_.multiplier, options_.max);
  ++failures_;
  std::uniform_real_distribution<double> half(0.5, 1.0);
  return step * half(random_);
}

void Backoff::Reset() {
  step_ = options_.initial;
  failures_ = 0;
}

}  // namespace syncopate::base
