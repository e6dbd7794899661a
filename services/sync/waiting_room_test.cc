#include "sync/waiting_room.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(WaitingRoomTest, TakesWaitersUpToAClockInClockThenTrainerOrder) {
  WaitingRoom room;
  room.Add(7, 3);
  room.Add(2, 5);
  room.Add(4, 3);
  room.Add(9, 4);
  EXPECT_TRUE(room.Contains(9));
  EXPECT_THAT(room.TakeUpTo(2), IsEmpty());
  EXPECT_THAT(room.TakeUpTo(4), ElementsAre(Pair(4, 3), Pair(7, 3), Pair(9, 4)));
  EXPECT_FALSE(room.Contains(9));
  EXPECT_EQ(room.size(), 1u);
  EXPECT_THAT(room.TakeUpTo(std::numeric_limits<int64_t>::max()), ElementsAre(Pair(2, 5)));
  EXPECT_EQ(room.size(), 0u);
}

TEST(WaitingRoomTest, AddMovesAWaiterAndRemoveForgetsIt) {
  WaitingRoom room;
  room.Add(1, 10);
  room.Add(1, 2);  // waits at 2 now, not at 10
  room.Add(3, 6);
  room.Remove(3);
  room.Remove(42);  // never waited: no-op
  EXPECT_THAT(room.TakeUpTo(100), ElementsAre(Pair(1, 2)));
  room.Add(1, 3);  // again after it was taken
  room.Add(1, 3);  // the same wait twice: one waiter
  room.Add(5, 1);
  room.Add(5, 4);
  EXPECT_EQ(room.size(), 2u);
  EXPECT_THAT(room.TakeUpTo(100), ElementsAre(Pair(1, 3), Pair(5, 4)));
  EXPECT_EQ(room.size(), 0u);
}

TEST(WaitingRoomTest, TakeWithinABoundOfTheMinimumNeverOverflows) {
  WaitingRoom room;
  room.Add(1, 5);
  room.Add(2, 9);
  room.Add(3, std::numeric_limits<int64_t>::max());
  EXPECT_THAT(room.TakeWithin(4, 1), ElementsAre(Pair(1, 5)));
  EXPECT_THAT(room.TakeWithin(8, std::numeric_limits<int64_t>::max()),
              ElementsAre(Pair(2, 9), Pair(3, std::numeric_limits<int64_t>::max())));
  room.Add(4, 100);
  EXPECT_THAT(room.TakeWithin(0, -1), ElementsAre(Pair(4, 100)));  // unbounded
}

}  // namespace
}  // namespace syncopate::sync
