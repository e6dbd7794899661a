#include "base/token_bucket.h"

#include <algorithm>

namespace syncopate::base {

TokenBucket::TokenBucket(double bytes_per_second, double burst_bytes, const Clock& clock)
    : rate_(bytes_per_second),
      burst_(burst_bytes),
      clock_(clock),
      tokens_(burst_bytes),
      last_(clock.Now()) {}

void TokenBucket::Refill() {
  const absl::Time now = clock_.Now();
  tokens_ = std::min(burst_, tokens_ + rate_ * absl::ToDoubleSeconds(now - last_));
  last_ = now;
}

absl::Duration TokenBucket::Take(size_t bytes) {
  absl::MutexLock lock(&mu_);
  Refill();
  tokens_ -= static_cast<double>(bytes);
  return tokens_ >= 0 ? absl::ZeroDuration() : absl::Seconds(-tokens_ / rate_);
}

absl::Duration TokenBucket::TakeIdle(size_t bytes) {
  absl::MutexLock lock(&mu_);
  Refill();
  const double needed = std::min(burst_, static_cast<double>(bytes));
  if (tokens_ >= needed) {
    tokens_ -= static_cast<double>(bytes);
    return absl::ZeroDuration();
  }
  return absl::Seconds((needed - tokens_) / rate_);
}

void PaceThrough(TokenBucket* bucket, size_t bytes) {
  if (bucket == nullptr) return;
  const absl::Duration wait = bucket->Take(bytes);
  if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
}

}  // namespace syncopate::base
