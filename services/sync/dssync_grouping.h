// DS-Sync's divide-and-shuffle grouping (Wang et al., 2020): each round the trainers are split
// into groups that average parameters only among themselves, and the groups are reshuffled every
// round so the model still mixes globally. The grouping is a pure function of (members, seed,
// round, options): every trainer computes the same one from the seed the coordinator gives.
#ifndef SYNCOPATE_SYNC_DSSYNC_GROUPING_H_
#define SYNCOPATE_SYNC_DSSYNC_GROUPING_H_

#include <cstdint>
#include <vector>

namespace syncopate::sync {

struct DsSyncOptions {
  // Groups per round (clamped to [1, number of members]); sizes differ by at most one.
  int groups = 2;
  // Bandwidth-aware: the members in `slow` (e.g. behind slow links) are dealt to different groups
  // first, so no group holds two of them while there are at least as many groups as slow members.
  std::vector<uint64_t> slow;
};

// The groups of round `round`, each sorted by id; `members` in any order (duplicates ignored).
// Independent of the platform's standard library: the shuffle uses its own generator.
std::vector<std::vector<uint64_t>> DsSyncGroups(std::vector<uint64_t> members, uint64_t seed,
                                                int64_t round, const DsSyncOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DSSYNC_GROUPING_H_
