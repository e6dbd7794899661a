#include "coordinator/trainer_book.h"

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

sync::Member Member(sync::TrainerId id, uint64_t incarnation, const std::string& name) {
  sync::Member m;
  m.id = id;
  m.incarnation = incarnation;
  m.name = name;
  return m;
}

TEST(TrainerBook, KeepsARecordPerNameAcrossIncarnationsAndCountsEvictions) {
  TrainerBook book(10);
  book.Admit(Member(1, 1, "a"), 0, 5, 2.0);
  v1::TrainerTimings timings;
  timings.set_compute_seconds(3);
  timings.set_wall_seconds(4);
  book.SetTimings(1, timings);
  EXPECT_DOUBLE_EQ(book.Of(1).compute_time_ratio(), 0.75);
  book.Depart(1, "evicted", "heartbeat timeout");
  EXPECT_EQ(book.Of(1).state(), "evicted");
  EXPECT_EQ(book.Of(1).eviction_reason(), "heartbeat timeout");
  book.Admit(Member(1, 2, "a"), 0, 7, 2.0);  // back under a new incarnation
  const v1::TrainerStatus& a = book.records().at("a");
  EXPECT_EQ(a.state(), "live");
  EXPECT_EQ(a.incarnation(), 2u);
  EXPECT_EQ(a.clock(), 7);
  EXPECT_EQ(a.evictions(), 1u) << "its history stays";
  EXPECT_FALSE(a.has_timings());
  EXPECT_EQ(book.NameOf(1), "a");
  EXPECT_EQ(book.NameOf(9), "");
}

TEST(TrainerBook, KeepsOnlyTheLatestDeparturesAndNeverDropsALiveTrainer) {
  TrainerBook book(2);
  for (sync::TrainerId id = 1; id <= 4; ++id) {
    book.Admit(Member(id, 1, "t" + std::to_string(id)), 0, 0, 1.0);
  }
  book.Depart(1, "left", "");
  book.Depart(2, "left", "");
  book.Depart(3, "done", "");
  EXPECT_EQ(book.records().count("t1"), 0u);
  EXPECT_EQ(book.records().count("t2"), 1u);
  EXPECT_EQ(book.records().count("t3"), 1u);
  EXPECT_EQ(book.records().at("t4").state(), "live");
  // A departed name that came back is live again, and is not dropped with its old departure.
  book.Admit(Member(2, 2, "t2"), 0, 0, 1.0);
  book.Depart(4, "left", "");
  EXPECT_EQ(book.records().at("t2").state(), "live");
}

}  // namespace
}  // namespace syncopate::coordinator
