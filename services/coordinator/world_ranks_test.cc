#include "coordinator/world_ranks.h"

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

// World ranks are places in the order of (rank, id), whatever ranks the trainers asked for, and
// follow every join and departure.
TEST(WorldRanksTest, PlacesFollowTheRanksAndTheMembership) {
  WorldRanks ranks;
  EXPECT_EQ(ranks.First(), 0u);
  EXPECT_EQ(ranks.size(), 0u);
  ranks.Add(/*rank=*/5, /*id=*/11);
  ranks.Add(2, 12);
  ranks.Add(9, 13);
  EXPECT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks.First(), 12u);
  EXPECT_EQ(ranks.PlaceOf(12), 0u);
  EXPECT_EQ(ranks.PlaceOf(11), 1u);
  EXPECT_EQ(ranks.PlaceOf(13), 2u);
  EXPECT_EQ(ranks.PlaceOf(99), 0u) << "not here";
  ranks.Remove(2, 12);
  ranks.Remove(2, 12);  // twice changes nothing
  EXPECT_EQ(ranks.First(), 11u);
  EXPECT_EQ(ranks.PlaceOf(11), 0u);
  EXPECT_EQ(ranks.PlaceOf(13), 1u);
  ranks.Add(0, 14);
  EXPECT_EQ(ranks.PlaceOf(14), 0u);
  EXPECT_EQ(ranks.PlaceOf(11), 1u);
  EXPECT_EQ(ranks.PlaceOf(13), 2u);
}

// A replacement may join under a rank before the trainer it replaces is evicted: the rank then
// names the newer.
TEST(WorldRanksTest, ARankNamesItsNewestHolder) {
  WorldRanks ranks;
  EXPECT_FALSE(ranks.AtRank(3).has_value());
  ranks.Add(3, 20);
  ranks.Add(4, 21);
  EXPECT_EQ(ranks.AtRank(3), 20u);
  ranks.Add(3, 22);
  EXPECT_EQ(ranks.AtRank(3), 22u);
  EXPECT_EQ(ranks.AtRank(4), 21u);
  EXPECT_FALSE(ranks.AtRank(2).has_value());
  EXPECT_FALSE(ranks.AtRank(5).has_value());
  ranks.Remove(3, 22);
  EXPECT_EQ(ranks.AtRank(3), 20u);
}

}  // namespace
}  // namespace syncopate::coordinator
