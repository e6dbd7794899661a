#include "sync/dssync_grouping.h"

#include <algorithm>

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

}  // namespace

std::vector<std::vector<uint64_t>> DsSyncGroups(std::vector<uint64_t> members, uint64_t seed,
                                                int64_t round, const DsSyncOptions& options) {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  if (members.empty()) return {};
  const size_t count =
      std::clamp<size_t>(static_cast<size_t>(std::max(options.groups, 1)), 1, members.size());
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
  size_t dealt = 0;
  for (const std::vector<uint64_t>* part : {&slow, &others}) {
    for (uint64_t m : *part) groups[(offset + dealt++) % count].push_back(m);
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

}  // namespace syncopate::sync
