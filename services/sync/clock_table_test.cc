#include "sync/clock_table.h"

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

TEST(ClockTable, TracksMinAndMaxThroughMovesAndErases) {
  ClockTable t;
  EXPECT_FALSE(t.Min());
  t.Set(1, 5);
  t.Set(2, 3);
  t.Set(3, 3);
  EXPECT_EQ(*t.Min(), 3);
  EXPECT_EQ(*t.Max(), 5);
  t.Set(2, 7);
  EXPECT_EQ(*t.Min(), 3);
  t.Erase(3);
  EXPECT_EQ(*t.Min(), 5);
  EXPECT_EQ(*t.Max(), 7);
  t.Erase(42);
  EXPECT_EQ(t.size(), 2u);
  t.Set(1, 5);  // unchanged
  t.Set(2, 5);  // joins trainer 1 at 5, in id order
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.At(5), (std::vector<TrainerId>{1, 2}));
  EXPECT_TRUE(t.At(7).empty());
  EXPECT_EQ(*t.Max(), 5);
}

}  // namespace
}  // namespace syncopate::sync
