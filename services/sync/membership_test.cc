#include "sync/membership.h"

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

const absl::Time kMembershipT0 = absl::UnixEpoch();

TEST(Membership, RejoinKeepsIdAndBumpsIncarnation) {
  Membership m;
  JoinResult a = *m.Join("trainer-0", 0, kMembershipT0);
  JoinResult b = *m.Join("trainer-1", 1, kMembershipT0);
  EXPECT_NE(a.member.id, b.member.id);
  ASSERT_TRUE(m.Remove(a.member.id, a.member.incarnation).ok());
  JoinResult again = *m.Join("trainer-0", 0, kMembershipT0);
  EXPECT_EQ(again.member.id, a.member.id);
  EXPECT_EQ(again.member.incarnation, a.member.incarnation + 1);
  EXPECT_FALSE(again.replaced);
}

TEST(Membership, RejoinWhileLiveReplacesTheOldIncarnation) {
  Membership m;
  JoinResult a = *m.Join("t", 0, kMembershipT0);
  JoinResult b = *m.Join("t", 0, kMembershipT0);
  ASSERT_TRUE(b.replaced);
  EXPECT_EQ(b.replaced->incarnation, a.member.incarnation);
  EXPECT_EQ(m.Touch(a.member.id, a.member.incarnation, kMembershipT0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(m.Touch(b.member.id, b.member.incarnation, kMembershipT0).ok());
}

TEST(Membership, UnknownAndDepartedTrainersAreRejected) {
  Membership m;
  EXPECT_EQ(m.Touch(99, 1, kMembershipT0).code(), absl::StatusCode::kUnauthenticated);
  JoinResult a = *m.Join("t", 0, kMembershipT0);
  ASSERT_TRUE(m.Remove(a.member.id, a.member.incarnation).ok());
  EXPECT_EQ(m.Touch(a.member.id, a.member.incarnation, kMembershipT0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(m.Join("", 0, kMembershipT0).ok());
}

TEST(Membership, ExpiresOnlySilentTrainers) {
  Membership m;
  JoinResult a = *m.Join("a", 0, kMembershipT0);
  JoinResult b = *m.Join("b", 1, kMembershipT0);
  ASSERT_TRUE(m.Touch(b.member.id, b.member.incarnation, kMembershipT0 + absl::Seconds(4)).ok());
  std::vector<Member> expired = m.Expired(kMembershipT0 + absl::Seconds(6), absl::Seconds(5));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, a.member.id);
  EXPECT_TRUE(m.Expired(kMembershipT0 + absl::Seconds(5), absl::Seconds(5)).empty());
}

// The keeper did not run from 2 s to 12 s: a trainer last seen before the gap has its silence
// counted without the gap; one seen within it (just before the freeze) counts from its end.
TEST(Membership, AGapTheKeeperDidNotRunIsExcused) {
  Membership m;
  JoinResult a = *m.Join("a", 0, kMembershipT0);
  JoinResult b = *m.Join("b", 1, kMembershipT0);
  ASSERT_TRUE(m.Touch(b.member.id, b.member.incarnation, kMembershipT0 + absl::Seconds(3)).ok());
  m.Excuse(kMembershipT0 + absl::Seconds(2), absl::Seconds(10));
  EXPECT_TRUE(m.Expired(kMembershipT0 + absl::Seconds(12), absl::Seconds(5)).empty());
  std::vector<Member> expired = m.Expired(kMembershipT0 + absl::Seconds(16), absl::Seconds(5));
  ASSERT_EQ(expired.size(), 1u);  // a: 2 s before the gap and 4 s after it
  EXPECT_EQ(expired[0].id, a.member.id);
  EXPECT_EQ(m.Expired(kMembershipT0 + absl::Seconds(18), absl::Seconds(5)).size(), 2u);
}

TEST(Membership, RestoresAResumedTrainerUnderItsOldIdentity) {
  Membership m;
  absl::StatusOr<Member> a = m.Restore(4, 2, "a", 0, kMembershipT0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(m.CheckLive(4, 2).ok());
  EXPECT_EQ(m.LastIncarnation(4), 2u);
  EXPECT_TRUE(absl::IsFailedPrecondition(m.Restore(4, 2, "a", 0, kMembershipT0).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(m.Restore(5, 1, "a", 0, kMembershipT0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(m.Restore(0, 1, "z", 0, kMembershipT0).status()));
  // New names get ids above those in use; a rejoin under "a" is its next incarnation.
  m.ReserveIds(9);
  EXPECT_EQ(m.Join("b", 1, kMembershipT0)->member.id, 10u);
  EXPECT_EQ(m.Join("a", 0, kMembershipT0)->member.incarnation, 3u);
}

}  // namespace
}  // namespace syncopate::sync
