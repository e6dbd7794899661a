// DS-Sync's divide-and-shuffle grouping (Wang et al., 2020): each round the trainers are split
// into groups that average parameters only among themselves, and the groups are reshuffled every
// round so the model still mixes globally. The grouping is a pure function of (members, seed,
// round, options); the coordinator computes it and grants each group its exchange.
#ifndef SYNCOPATE_SYNC_DSSYNC_GROUPING_H_
#define SYNCOPATE_SYNC_DSSYNC_GROUPING_H_

#include <cstdint>
#include <map>
#include <vector>

namespace syncopate::sync {

// How many members each group of a round gets.
enum class GroupSizing {
  kEqual,  // sizes differ by at most one
  // A group's exchange sends (size - 1) models over its slowest link, so groups with slower links
  // are smaller. There are at most half as many groups as members (at least one), so that nobody
  // is left alone: each group starts with the members dealt to it, and at least two; every further
  // place goes to the group whose exchange, (size - 1) / slowest rate, would then be shortest
  // (ties: the lower index). A group's slowest rate is the median rate of the members that are not
  // slow, or the least rate of the `slow` members dealt to it where that is lower. The members
  // that are not slow fill the places in shuffled order. Equal rates give sizes that differ by at
  // most one.
  kBandwidth,
};

struct DsSyncOptions {
  // Groups per round (clamped to [1, number of members]; kBandwidth: to [1, members / 2]).
  int groups = 2;
  // Bandwidth-aware: the members in `slow` (e.g. behind slow links) are dealt to different groups
  // first, so no group holds two of them while there are at least as many groups as slow members.
  std::vector<uint64_t> slow;
  GroupSizing sizing = GroupSizing::kEqual;
  // kBandwidth: each member's link rate (its slower direction; any unit). A member without one,
  // or with one that is not positive and finite, counts at the median of those given; none
  // given: sizes that differ by at most one.
  std::map<uint64_t, double> rates;
  // Every round that is a positive multiple of this is one group of all members: a global average
  // (the paper's periodic one). 0: never.
  int64_t global_average_every = 0;
};

// The upper median of `values` (the middle one, or the higher of the middle two); `values` must not
// be empty.
double UpperMedian(std::vector<double> values);

// The groups of round `round`, each sorted by id; `members` in any order (duplicates ignored).
// Independent of the platform's standard library: the shuffle uses its own generator.
std::vector<std::vector<uint64_t>> DsSyncGroups(std::vector<uint64_t> members, uint64_t seed,
                                                int64_t round, const DsSyncOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DSSYNC_GROUPING_H_
