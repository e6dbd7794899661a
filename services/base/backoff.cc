#include "base/backoff.h"

#include <algorithm>
#include <atomic>

namespace syncopate::base {

Backoff::Backoff(BackoffOptions options, uint64_t seed)
    : options_(options), random_(seed), step_(options.initial) {}

uint64_t Backoff::NextSeed() {
  static const uint64_t base = std::random_device()();
  static std::atomic<uint64_t> counter{0};
  // splitmix64 of the base plus a counter: distinct, well-mixed seeds.
  uint64_t z = base + 0x9e3779b97f4a7c15ULL * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

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
