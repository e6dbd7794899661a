// A token bucket that paces byte streams to a rate: the emulated link limits of trainers
// (--egress-rate, --ingress-rate) enforced on their real transfers.
#ifndef SYNCOPATE_BASE_TOKEN_BUCKET_H_
#define SYNCOPATE_BASE_TOKEN_BUCKET_H_

#include <cstddef>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace syncopate::base {

// Thread-safe: concurrent streams through one bucket share its rate.
class TokenBucket {
 public:
  // `bytes_per_second` > 0; up to `burst_bytes` may pass at once after an idle period.
  TokenBucket(double bytes_per_second, double burst_bytes, const Clock& clock);

  // Takes `bytes` and returns how long the caller must wait before sending them (zero when the
  // bucket holds enough). Chunks larger than the burst are allowed: the bucket goes into debt and
  // later callers wait for it, so the long-run rate never exceeds bytes_per_second.
  absl::Duration Take(size_t bytes);
  // Low priority: takes `bytes` only when the bucket holds them now, and returns zero; otherwise
  // takes nothing and returns how long until it may hold them. While Take's callers keep the
  // bucket in debt this never succeeds, so a stream sent this way uses only the rate that the
  // others leave idle. A chunk larger than the burst is taken once the bucket is full, into debt
  // as with Take.
  absl::Duration TakeIdle(size_t bytes);

  double bytes_per_second() const { return rate_; }

 private:
  void Refill() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double rate_;
  const double burst_;
  const Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

// Sleeps for what `bucket` asks before `bytes` may pass; a no-op for a null bucket (no limit).
void PaceThrough(TokenBucket* bucket, size_t bytes);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_TOKEN_BUCKET_H_
