#include "sync/dssync_grouping.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

std::vector<uint64_t> Ids(int n) {
  std::vector<uint64_t> ids;
  for (int i = 1; i <= n; ++i) ids.push_back(static_cast<uint64_t>(i) * 10);
  return ids;
}

TEST(DsSyncGroupingTest, EveryTrainerComputesTheSameGrouping) {
  std::vector<uint64_t> members = Ids(9);
  std::vector<uint64_t> reversed(members.rbegin(), members.rend());
  DsSyncOptions options{3, {}};
  EXPECT_EQ(DsSyncGroups(members, 42, 7, options), DsSyncGroups(reversed, 42, 7, options));
  // A fixed value pins the generator: a change would split a mixed-version cluster.
  const std::vector<std::vector<uint64_t>> pinned = {{20, 30, 50}, {10, 40, 80}, {60, 70, 90}};
  EXPECT_EQ(DsSyncGroups(members, 42, 7, options), pinned);
}

TEST(DsSyncGroupingTest, GroupsPartitionTheMembersEvenly) {
  for (int n = 1; n <= 12; ++n) {
    for (int g = 1; g <= 5; ++g) {
      const std::vector<uint64_t> ids = Ids(n);
      auto groups = DsSyncGroups(ids, 1, 3, {g, {}});
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
  auto previous = DsSyncGroups(members, 5, 0, {4, {}});
  for (int64_t round = 0; round < 60; ++round) {
    auto groups = DsSyncGroups(members, 5, round, {4, {}});
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
  const DsSyncOptions options{3, {20, 50, 110}};
  for (int64_t round = 0; round < 40; ++round) {
    for (const auto& group : DsSyncGroups(members, 9, round, options)) {
      int slow = 0;
      for (uint64_t m : group) slow += m == 20 || m == 50 || m == 110;
      EXPECT_EQ(slow, 1) << "round " << round;
    }
  }
}

TEST(DsSyncGroupingTest, EmptyAndDuplicateMembers) {
  EXPECT_TRUE(DsSyncGroups({}, 1, 1, {2, {}}).empty());
  auto groups = DsSyncGroups({30, 10, 30, 20}, 1, 1, {5, {}});
  EXPECT_EQ(groups.size(), 3u);  // three distinct members, one each
}

}  // namespace
}  // namespace syncopate::sync
