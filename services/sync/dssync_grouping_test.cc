#include "sync/dssync_grouping.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

DsSyncOptions Options(int groups, std::vector<uint64_t> slow = {},
                      GroupSizing sizing = GroupSizing::kEqual,
                      std::map<uint64_t, double> rates = {}) {
  DsSyncOptions options;
  options.groups = groups;
  options.slow = std::move(slow);
  options.sizing = sizing;
  options.rates = std::move(rates);
  return options;
}

std::vector<uint64_t> Ids(int n) {
  std::vector<uint64_t> ids;
  for (int i = 1; i <= n; ++i) ids.push_back(static_cast<uint64_t>(i) * 10);
  return ids;
}

TEST(DsSyncGroupingTest, EveryTrainerComputesTheSameGrouping) {
  std::vector<uint64_t> members = Ids(9);
  std::vector<uint64_t> reversed(members.rbegin(), members.rend());
  DsSyncOptions options = Options(3);
  EXPECT_EQ(DsSyncGroups(members, 42, 7, options), DsSyncGroups(reversed, 42, 7, options));
  // A fixed value pins the generator: a change would split a mixed-version cluster.
  const std::vector<std::vector<uint64_t>> pinned = {{20, 30, 50}, {10, 40, 80}, {60, 70, 90}};
  EXPECT_EQ(DsSyncGroups(members, 42, 7, options), pinned);
}

TEST(DsSyncGroupingTest, GroupsPartitionTheMembersEvenly) {
  for (int n = 1; n <= 12; ++n) {
    for (int g = 1; g <= 5; ++g) {
      const std::vector<uint64_t> ids = Ids(n);
      auto groups = DsSyncGroups(ids, 1, 3, Options(g));
      EXPECT_EQ(groups.size(), static_cast<size_t>(std::min(n, g)));
      std::multiset<uint64_t> seen;
      size_t smallest = SIZE_MAX;
      size_t largest = 0;
      for (const auto& group : groups) {
        seen.insert(group.begin(), group.end());
        smallest = std::min(smallest, group.size());
        largest = std::max(largest, group.size());
      }
      EXPECT_EQ(seen, std::multiset<uint64_t>(ids.begin(), ids.end()));
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

TEST(DsSyncGroupingTest, GroupsAreReshuffledAndMixEveryPair) {
  const std::vector<uint64_t> members = Ids(8);
  std::set<std::pair<uint64_t, uint64_t>> met;
  int changed = 0;
  auto previous = DsSyncGroups(members, 5, 0, Options(4));
  for (int64_t round = 0; round < 60; ++round) {
    auto groups = DsSyncGroups(members, 5, round, Options(4));
    changed += groups != previous;
    previous = groups;
    for (const auto& g : groups) {
      for (uint64_t a : g) {
        for (uint64_t b : g) {
          if (a < b) met.insert({a, b});
        }
      }
    }
  }
  EXPECT_GT(changed, 50);
  EXPECT_EQ(met.size(), 8u * 7 / 2);  // every pair averaged together at some round
}

TEST(DsSyncGroupingTest, SlowMembersAreSpreadOverGroups) {
  const std::vector<uint64_t> members = Ids(12);
  const DsSyncOptions options = Options(3, {20, 50, 110});
  for (int64_t round = 0; round < 40; ++round) {
    for (const auto& group : DsSyncGroups(members, 9, round, options)) {
      int slow = 0;
      for (uint64_t m : group) slow += m == 20 || m == 50 || m == 110;
      EXPECT_EQ(slow, 1) << "round " << round;
    }
  }
}

// The size of the group holding `member`.
size_t SizeOfGroupOf(const std::vector<std::vector<uint64_t>>& groups, uint64_t member) {
  for (const auto& group : groups) {
    if (std::find(group.begin(), group.end(), member) != group.end()) return group.size();
  }
  return 0;
}

// Every member in exactly one group.
void ExpectPartition(const std::vector<std::vector<uint64_t>>& groups,
                     const std::vector<uint64_t>& members) {
  std::multiset<uint64_t> seen;
  for (const auto& group : groups) {
    EXPECT_FALSE(group.empty());
    seen.insert(group.begin(), group.end());
  }
  EXPECT_EQ(seen, std::multiset<uint64_t>(members.begin(), members.end()));
}

TEST(DsSyncGroupingTest, SizedByBandwidthTheSlowLinksGroupIsSmaller) {
  // One link at a quarter of the others' rate: its group's exchange of (size - 1) models takes
  // (2 - 1) / 1 = 1 against the other group's (6 - 1) / 4 = 1.25; equal sizes would give it 3.
  const std::vector<uint64_t> members = Ids(8);
  DsSyncOptions options = Options(2, {20}, GroupSizing::kBandwidth);
  for (uint64_t m : members) options.rates[m] = m == 20 ? 1.0 : 4.0;
  std::set<uint64_t> partners;
  for (int64_t round = 0; round < 30; ++round) {
    const auto groups = DsSyncGroups(members, 5, round, options);
    ExpectPartition(groups, members);
    ASSERT_EQ(groups.size(), 2u);
    for (const auto& group : groups) {
      const bool slow = std::find(group.begin(), group.end(), 20) != group.end();
      EXPECT_EQ(group.size(), slow ? 2u : 6u) << "round " << round;
      if (slow) partners.insert(group.begin(), group.end());
    }
  }
  EXPECT_EQ(partners.size(), 8u);  // the shuffle still brings everyone to the slow link in turn
  // Equal sizing of the same members: 4 and 4.
  options.sizing = GroupSizing::kEqual;
  EXPECT_EQ(SizeOfGroupOf(DsSyncGroups(members, 5, 0, options), 20), 4u);
}

TEST(DsSyncGroupingTest, SizedByBandwidthEqualRatesGiveEvenGroups) {
  for (int n = 1; n <= 12; ++n) {
    for (int g = 1; g <= 5; ++g) {
      const std::vector<uint64_t> members = Ids(n);
      DsSyncOptions options = Options(g, {}, GroupSizing::kBandwidth);
      for (uint64_t m : members) options.rates[m] = 7.0;
      for (const DsSyncOptions& o : {options, Options(g, {}, GroupSizing::kBandwidth)}) {
        const auto groups = DsSyncGroups(members, 3, 1, o);
        ExpectPartition(groups, members);
        // At most half as many groups as members, so nobody is alone.
        EXPECT_EQ(groups.size(), static_cast<size_t>(std::min(std::max(1, n / 2), g)));
        size_t smallest = SIZE_MAX;
        size_t largest = 0;
        for (const auto& group : groups) {
          smallest = std::min(smallest, group.size());
          largest = std::max(largest, group.size());
        }
        EXPECT_LE(largest - smallest, 1u) << n << " members, " << g << " groups";
      }
    }
  }
}

TEST(DsSyncGroupingTest, SizedByBandwidthNoSlowLinkIsLeftAlone) {
  // Three links far slower than the rest, three groups: each slow link gets one partner while
  // there are at least two members per group...
  const std::vector<uint64_t> six = Ids(6);
  DsSyncOptions options = Options(3, {10, 20, 30}, GroupSizing::kBandwidth);
  for (uint64_t m : six) options.rates[m] = m <= 30 ? 0.001 : 100.0;
  for (int64_t round = 0; round < 10; ++round) {
    const auto groups = DsSyncGroups(six, 1, round, options);
    ExpectPartition(groups, six);
    for (const auto& group : groups) EXPECT_EQ(group.size(), 2u);
  }
  // ...and never alone, where the fast group would otherwise take every place: one slow link of
  // 4 trainers in 2 groups (not 1 and 3); of 3 in 2 groups (one group: equal sizing would leave
  // one trainer alone); of 5 in 3 groups (two groups, of 2 and 3).
  for (const auto& [n, groups, expected] : std::vector<std::tuple<int, int, std::vector<size_t>>>{
           {4, 2, {2, 2}}, {3, 2, {3}}, {5, 3, {2, 3}}}) {
    const std::vector<uint64_t> ids = Ids(n);
    DsSyncOptions few = Options(groups, {10}, GroupSizing::kBandwidth);
    for (uint64_t m : ids) few.rates[m] = m == 10 ? 0.001 : 100.0;
    for (int64_t round = 0; round < 10; ++round) {
      const auto grouping = DsSyncGroups(ids, 1, round, few);
      ExpectPartition(grouping, ids);
      std::vector<size_t> sizes;
      for (const auto& group : grouping) sizes.push_back(group.size());
      std::sort(sizes.begin(), sizes.end());
      EXPECT_EQ(sizes, expected) << n << " members, " << groups << " groups, round " << round;
      EXPECT_EQ(SizeOfGroupOf(grouping, 10), expected.front());
    }
  }
}

TEST(DsSyncGroupingTest, SizedByBandwidthUnmeasuredMembersCountAtTheMedian) {
  // 10 is slow (1); 20 and 30 were measured at 10; the rest were not, so count at 10 too. With a
  // zero or negative rate ignored as unmeasured.
  const std::vector<uint64_t> members = Ids(6);
  const DsSyncOptions options = Options(2, {10}, GroupSizing::kBandwidth,
                                        {{10, 1.0}, {20, 10.0}, {30, 10.0}, {40, 0.0}, {50, -3.0}});
  for (int64_t round = 0; round < 10; ++round) {
    const auto groups = DsSyncGroups(members, 2, round, options);
    ExpectPartition(groups, members);
    EXPECT_EQ(SizeOfGroupOf(groups, 10), 2u) << "round " << round;
  }
}

TEST(DsSyncGroupingTest, EveryKthRoundIsOneGroupOfAll) {
  const std::vector<uint64_t> members = Ids(7);
  DsSyncOptions options = Options(3, {20}, GroupSizing::kBandwidth, {{20, 1.0}});
  options.global_average_every = 4;
  for (int64_t round = 0; round <= 12; ++round) {
    const auto groups = DsSyncGroups(members, 1, round, options);
    ExpectPartition(groups, members);
    EXPECT_EQ(groups.size(), round > 0 && round % 4 == 0 ? 1u : 3u) << "round " << round;
  }
}

TEST(DsSyncGroupingTest, EmptyAndDuplicateMembers) {
  EXPECT_TRUE(DsSyncGroups({}, 1, 1, Options(2)).empty());
  auto groups = DsSyncGroups({30, 10, 30, 20}, 1, 1, Options(5));
  EXPECT_EQ(groups.size(), 3u);  // three distinct members, one each
}

}  // namespace
}  // namespace syncopate::sync
