#include "sync/dssync_grouping.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace syncopate::sync {
namespace {

// SplitMix64 (Steele, Lea and Flood 2014): a fixed, portable generator, so every trainer's build
// shuffles identically.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) by rejection, without modulo bias.
  uint64_t Below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % bound;
  }

 private:
  uint64_t state_;
};

void Shuffle(std::vector<uint64_t>& items, SplitMix64& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.Below(i)]);
}

// GroupSizing::kBandwidth's sizes for `groups`, which hold the slow members dealt so far, over
// `members` (`others`: those not slow). Contract in the header.
std::vector<size_t> BandwidthSizes(const std::vector<std::vector<uint64_t>>& groups,
                                   const std::vector<uint64_t>& members,
                                   const std::vector<uint64_t>& others,
                                   const std::map<uint64_t, double>& rates) {
  auto given = [&](uint64_t m) -> std::optional<double> {
    auto it = rates.find(m);
    if (it == rates.end() || !std::isfinite(it->second) || it->second <= 0) return std::nullopt;
    return it->second;
  };
  std::vector<double> known;
  for (uint64_t m : members) {
    if (auto rate = given(m)) known.push_back(*rate);
  }
  const double fallback = known.empty() ? 1.0 : UpperMedian(known);
  auto rate_of = [&](uint64_t m) { return given(m).value_or(fallback); };
  std::vector<double> other_rates;
  for (uint64_t m : others) other_rates.push_back(rate_of(m));
  const double typical = other_rates.empty() ? fallback : UpperMedian(other_rates);

  const size_t count = groups.size();
  const size_t floor = members.size() >= 2 ? 2 : 1;  // DsSyncGroups keeps count <= members / 2
  std::vector<size_t> sizes(count);
  std::vector<double> slowest(count, typical);
  size_t placed = 0;
  for (size_t g = 0; g < count; ++g) {
    for (uint64_t m : groups[g]) slowest[g] = std::min(slowest[g], rate_of(m));
    sizes[g] = std::max(groups[g].size(), floor);
    placed += sizes[g];
  }
  // The exchange of a group of size s takes (s - 1) / slowest: one more place makes it s / slowest.
  for (; placed < members.size(); ++placed) {
    size_t best = 0;
    for (size_t g = 1; g < count; ++g) {
      if (sizes[g] / slowest[g] < sizes[best] / slowest[best]) best = g;
    }
    ++sizes[best];
  }
  return sizes;
}

}  // namespace

double UpperMedian(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

std::vector<std::vector<uint64_t>> DsSyncGroups(std::vector<uint64_t> members, uint64_t seed,
                                                int64_t round, const DsSyncOptions& options) {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  if (members.empty()) return {};
  if (options.global_average_every > 0 && round > 0 && round % options.global_average_every == 0) {
    return {members};
  }
  const size_t most = options.sizing == GroupSizing::kEqual
                          ? members.size()
                          : std::max<size_t>(1, members.size() / 2);
  const size_t count =
      std::clamp<size_t>(static_cast<size_t>(std::max(options.groups, 1)), 1, most);
  SplitMix64 rng(seed ^ (static_cast<uint64_t>(round) * 0xd1342543de82ef95ULL));

  // Slow members first (in shuffled order), then the others: dealing this sequence round-robin
  // puts the slow ones in different groups. Sizes come out balanced either way.
  std::vector<uint64_t> slow;
  std::vector<uint64_t> others;
  for (uint64_t m : members) {
    const bool is_slow =
        std::find(options.slow.begin(), options.slow.end(), m) != options.slow.end();
    (is_slow ? slow : others).push_back(m);
  }
  Shuffle(slow, rng);
  Shuffle(others, rng);
  // Which group gets the first card also rotates, so slow members do not always share group 0's
  // position when they are fewer than the groups.
  const size_t offset = rng.Below(count);
  std::vector<std::vector<uint64_t>> groups(count);
  if (options.sizing == GroupSizing::kEqual) {
    size_t dealt = 0;
    for (const std::vector<uint64_t>* part : {&slow, &others}) {
      for (uint64_t m : *part) groups[(offset + dealt++) % count].push_back(m);
    }
  } else {
    for (size_t d = 0; d < slow.size(); ++d) groups[(offset + d) % count].push_back(slow[d]);
    const std::vector<size_t> sizes = BandwidthSizes(groups, members, others, options.rates);
    size_t next = 0;
    for (size_t g = 0; g < count; ++g) {
      while (groups[g].size() < sizes[g]) groups[g].push_back(others[next++]);
    }
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

}  // namespace syncopate::sync
