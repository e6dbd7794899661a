#include "store/round_waiters.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace syncopate::store {
namespace {

const absl::StatusOr<bool> kParked = true;
const absl::StatusOr<bool> kServedNow = false;

// What woke each pull: its statuses (more than one would be a defect).
struct Woken {
  std::vector<absl::Status> statuses;
  RoundWaiters::Wake Recorder() {
    return [this](const absl::Status& s) { statuses.push_back(s); };
  }
};

class RoundWaitersTest : public ::testing::Test {
 protected:
  RoundWaiters::Options Options(absl::Duration max_wait = absl::Seconds(5)) {
    RoundWaiters::Options options;
    options.max_wait = max_wait;
    options.max_rounds_ahead = 2;
    options.max_parked = 3;
    return options;
  }
  std::function<int64_t()> LastClosed() {
    return [this] { return last_closed_; };
  }
  // A distinct ticket per index.
  RoundWaiters::Ticket T(int i) { return &tickets_[i]; }

  base::FakeClock clock_;
  int64_t last_closed_ = 4;
  char tickets_[8] = {};
};

TEST_F(RoundWaitersTest, AClosedRoundIsServedAtOnce) {
  RoundWaiters waiters(Options(), clock_);
  Woken woken;
  EXPECT_EQ(waiters.Park(T(0), 4, absl::Seconds(1), LastClosed(), woken.Recorder()), kServedNow);
  EXPECT_EQ(waiters.Park(T(0), 2, absl::Seconds(1), LastClosed(), woken.Recorder()), kServedNow);
  EXPECT_EQ(waiters.parked(), 0u);
  waiters.Closed(10);
  EXPECT_TRUE(woken.statuses.empty());  // a pull served at once is never woken
}

TEST_F(RoundWaitersTest, APulledRoundWakesWhenItOrALaterOneCloses) {
  RoundWaiters waiters(Options(), clock_);
  Woken five, six;
  EXPECT_EQ(waiters.Park(T(0), 5, absl::Seconds(1), LastClosed(), five.Recorder()), kParked);
  EXPECT_EQ(waiters.Park(T(1), 6, absl::Seconds(1), LastClosed(), six.Recorder()), kParked);
  waiters.Closed(4);
  EXPECT_TRUE(five.statuses.empty());
  waiters.Closed(5);
  ASSERT_EQ(five.statuses.size(), 1u);
  EXPECT_TRUE(five.statuses[0].ok());
  EXPECT_TRUE(six.statuses.empty());
  waiters.Closed(7);  // rounds may close several at a time
  ASSERT_EQ(six.statuses.size(), 1u);
  EXPECT_TRUE(six.statuses[0].ok());
  waiters.Closed(8);
  EXPECT_EQ(five.statuses.size(), 1u);  // once each
  EXPECT_EQ(waiters.parked(), 0u);
}

TEST_F(RoundWaitersTest, APullNotServedByItsDeadlineIsToldToRetry) {
  RoundWaiters waiters(Options(absl::Seconds(5)), clock_);
  Woken patient, hurried;
  ASSERT_EQ(waiters.Park(T(0), 5, absl::Minutes(1), LastClosed(), patient.Recorder()), kParked);
  ASSERT_EQ(waiters.Park(T(1), 5, absl::Seconds(2), LastClosed(), hurried.Recorder()), kParked);
  clock_.Advance(absl::Milliseconds(1999));
  EXPECT_EQ(waiters.Expire(), 0);
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(waiters.Expire(), 1);  // its own patience
  ASSERT_EQ(hurried.statuses.size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(hurried.statuses[0])) << hurried.statuses[0];
  EXPECT_NE(hurried.statuses[0].message().find("round 5"), std::string::npos);
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(waiters.Expire(), 1);  // the shard's limit, below the caller's minute
  ASSERT_EQ(patient.statuses.size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(patient.statuses[0]));
  waiters.Closed(5);
  EXPECT_EQ(patient.statuses.size(), 1u);
}

TEST_F(RoundWaitersTest, AWithdrawnPullIsNeverWoken) {
  RoundWaiters waiters(Options(), clock_);
  Woken gone, kept;
  ASSERT_EQ(waiters.Park(T(0), 5, absl::Seconds(1), LastClosed(), gone.Recorder()), kParked);
  ASSERT_EQ(waiters.Park(T(1), 5, absl::Seconds(1), LastClosed(), kept.Recorder()), kParked);
  EXPECT_TRUE(waiters.Withdraw(T(0)));
  EXPECT_FALSE(waiters.Withdraw(T(0)));
  waiters.Closed(5);
  EXPECT_TRUE(gone.statuses.empty());
  EXPECT_EQ(kept.statuses.size(), 1u);
  EXPECT_FALSE(waiters.Withdraw(T(1)));  // woken already: its wake ran
  EXPECT_FALSE(waiters.Withdraw(T(2)));  // never parked
}

TEST_F(RoundWaitersTest, RefusesWhatItCannotOrShouldNotHold) {
  Woken woken;
  {
    RoundWaiters off(Options(absl::ZeroDuration()), clock_);
    absl::StatusOr<bool> refused =
        off.Park(T(0), 5, absl::Seconds(1), LastClosed(), woken.Recorder());
    EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
    EXPECT_NE(refused.status().message().find("not closed yet"), std::string::npos);
  }
  RoundWaiters waiters(Options(), clock_);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      waiters.Park(T(0), 7, absl::Seconds(1), LastClosed(), woken.Recorder()).status()));
  ASSERT_EQ(waiters.Park(T(0), 6, absl::Seconds(1), LastClosed(), woken.Recorder()), kParked);
  EXPECT_TRUE(absl::IsInvalidArgument(
      waiters.Park(T(0), 6, absl::Seconds(1), LastClosed(), woken.Recorder()).status()));
  ASSERT_EQ(waiters.Park(T(1), 5, absl::Seconds(1), LastClosed(), woken.Recorder()), kParked);
  ASSERT_EQ(waiters.Park(T(2), 5, absl::Seconds(1), LastClosed(), woken.Recorder()), kParked);
  EXPECT_TRUE(absl::IsResourceExhausted(
      waiters.Park(T(3), 5, absl::Seconds(1), LastClosed(), woken.Recorder()).status()));
  EXPECT_EQ(waiters.parked(), 3u);  // a refusal changes nothing
  EXPECT_TRUE(woken.statuses.empty());
}

TEST_F(RoundWaitersTest, StoppingWakesEveryPullAndParksNoMore) {
  RoundWaiters waiters(Options(), clock_);
  Woken a, b;
  ASSERT_EQ(waiters.Park(T(0), 5, absl::Seconds(1), LastClosed(), a.Recorder()), kParked);
  ASSERT_EQ(waiters.Park(T(1), 6, absl::Seconds(1), LastClosed(), b.Recorder()), kParked);
  waiters.Stop();
  ASSERT_EQ(a.statuses.size(), 1u);
  ASSERT_EQ(b.statuses.size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(a.statuses[0]));
  EXPECT_TRUE(absl::IsUnavailable(
      waiters.Park(T(2), 5, absl::Seconds(1), LastClosed(), a.Recorder()).status()));
}

TEST_F(RoundWaitersTest, AWakeMayCallBackIn) {
  RoundWaiters waiters(Options(), clock_);
  bool parked_again = false;
  ASSERT_EQ(waiters.Park(T(0), 5, absl::Seconds(1), LastClosed(),
                         [&](const absl::Status&) {
                           // Woken outside the lock: it may park the next round's pull.
                           parked_again = waiters
                                              .Park(T(0), 6, absl::Seconds(1), LastClosed(),
                                                    [](const absl::Status&) {})
                                              .value_or(false);
                         }),
            kParked);
  last_closed_ = 5;
  waiters.Closed(5);
  EXPECT_TRUE(parked_again);
  EXPECT_EQ(waiters.parked(), 1u);
}

// Rounds close on one thread while pulls park on others: whichever sees its round not closed yet
// is woken by a later Closed, so none is left waiting.
TEST(RoundWaitersRaceTest, NoCloseSlipsBetweenTheCheckAndThePark) {
  base::FakeClock clock;
  constexpr int kRounds = 2000;
  constexpr int kPullers = 2;
  RoundWaiters::Options options;
  options.max_rounds_ahead = kRounds;  // pullers may run ahead of the closes
  options.max_parked = kPullers * kRounds;
  RoundWaiters waiters(options, clock);
  std::atomic<int64_t> last_closed{0};
  std::atomic<int> served_at_once{0}, woken_ok{0}, woken_other{0};
  std::vector<char> tickets(kPullers * kRounds);
  std::vector<std::thread> pullers;
  for (int p = 0; p < kPullers; ++p) {
    pullers.emplace_back([&, p] {
      for (int r = 1; r <= kRounds; ++r) {
        absl::StatusOr<bool> parked = waiters.Park(
            &tickets[p * kRounds + r - 1], r, absl::Hours(1), [&] { return last_closed.load(); },
            [&](const absl::Status& s) { ++(s.ok() ? woken_ok : woken_other); });
        ASSERT_TRUE(parked.ok()) << parked.status();
        if (!*parked) ++served_at_once;
      }
    });
  }
  for (int r = 1; r <= kRounds; ++r) {
    last_closed = r;
    waiters.Closed(r);
  }
  for (std::thread& t : pullers) t.join();
  // Pulls parked after the last close asked for a closed round, so none can remain.
  EXPECT_EQ(waiters.parked(), 0u);
  EXPECT_EQ(served_at_once + woken_ok, kPullers * kRounds);
  EXPECT_EQ(woken_other, 0);
}

}  // namespace
}  // namespace syncopate::store
