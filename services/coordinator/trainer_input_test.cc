#include "coordinator/trainer_input.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(TrainerInput, NamesAreShortAndSafeToLog) {
  EXPECT_TRUE(CheckTrainerName("trainer-0").ok());
  EXPECT_TRUE(CheckTrainerName("syncopate-trainer-12.pod_A").ok());
  EXPECT_TRUE(CheckTrainerName(std::string(kMaxTrainerNameLength, 'a')).ok());
  EXPECT_FALSE(CheckTrainerName(std::string(kMaxTrainerNameLength + 1, 'a')).ok());
  for (const char* bad : {"", "a b", "a\nb", "a/b", "a\"b", "{}", "a\x1b[31m"}) {
    EXPECT_EQ(CheckTrainerName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // The error quotes the name escaped and cut, so it cannot forge a log line either.
  const absl::Status s = CheckTrainerName(std::string("x\nERROR forged") + std::string(200, 'y'));
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_LT(s.message().size(), 200u) << s.message();
}

TEST(TrainerInput, JoinsCheckAddressAndSlowdown) {
  v1::Join join;
  join.set_name("t");
  EXPECT_TRUE(CheckJoin(join).ok());
  join.set_peer_address("10.0.0.7:7100");
  EXPECT_TRUE(CheckJoin(join).ok());
  join.set_peer_address("10.0.0.7:7100\nx");
  EXPECT_FALSE(CheckJoin(join).ok());
  join.set_peer_address(std::string(kMaxPeerAddressLength + 1, '1'));
  EXPECT_FALSE(CheckJoin(join).ok());
  join.set_peer_address("");
  for (double slowdown : {kNaN, kInf, -1.0}) {
    join.set_slowdown(slowdown);
    EXPECT_FALSE(CheckJoin(join).ok()) << slowdown;
  }
}

v1::TrainerTimings Timings(double compute, double wait, double communication, double wall,
                           double emulated) {
  v1::TrainerTimings t;
  t.set_compute_seconds(compute);
  t.set_wait_seconds(wait);
  t.set_communication_seconds(communication);
  t.set_wall_seconds(wall);
  t.set_emulated_compute_seconds(emulated);
  return t;
}

TEST(TrainerInput, TimingsAreFiniteNonNegativeAndWithinTheWallTime) {
  EXPECT_TRUE(CheckTimings(Timings(0, 0, 0, 0, 0)).ok());
  EXPECT_TRUE(CheckTimings(Timings(80, 15, 30, 100, 60)).ok());
  // Overlapped modes compute and communicate at once: each part is bounded, not their sum.
  EXPECT_TRUE(CheckTimings(Timings(99, 1, 95, 100, 0)).ok());
  EXPECT_TRUE(CheckTimings(Timings(100.5, 0, 0, 100, 0)).ok()) << "rounding between clocks";
  for (double bad : {kNaN, kInf, -kInf, -0.5, 2e9}) {
    EXPECT_FALSE(CheckTimings(Timings(bad, 0, 0, 100, 0)).ok()) << bad;
    EXPECT_FALSE(CheckTimings(Timings(0, bad, 0, 100, 0)).ok()) << bad;
    EXPECT_FALSE(CheckTimings(Timings(0, 0, bad, 100, 0)).ok()) << bad;
    EXPECT_FALSE(CheckTimings(Timings(0, 0, 0, bad, 0)).ok()) << bad;
    EXPECT_FALSE(CheckTimings(Timings(0, 0, 0, 100, bad)).ok()) << bad;
  }
  EXPECT_FALSE(CheckTimings(Timings(200, 0, 0, 100, 0)).ok());
  EXPECT_FALSE(CheckTimings(Timings(0, 200, 0, 100, 0)).ok());
  EXPECT_FALSE(CheckTimings(Timings(0, 0, 200, 100, 0)).ok());
  EXPECT_FALSE(CheckTimings(Timings(10, 0, 0, 100, 20)).ok()) << "emulated beyond compute";
}

TEST(TrainerInput, TransfersAndAccuracy) {
  v1::TransferReport t;
  t.set_sent_bytes(4e5);
  t.set_send_seconds(0.01);
  EXPECT_TRUE(CheckTransfers(t).ok());
  t.set_received_bytes(-1);
  EXPECT_FALSE(CheckTransfers(t).ok());
  t.set_received_bytes(kNaN);
  EXPECT_FALSE(CheckTransfers(t).ok());
  t.set_received_bytes(0);
  t.set_receive_seconds(kInf);
  EXPECT_FALSE(CheckTransfers(t).ok());

  t.set_receive_seconds(0.02);
  v1::StreamTransfer* stream = t.add_received_streams();
  stream->set_peer(3);
  stream->set_bytes(4e5);
  stream->set_start_seconds(0.005);
  stream->set_seconds(0.01);
  ASSERT_TRUE(CheckTransfers(t).ok());
  const sync::TransferSample sample = TransferSampleOf(t);
  ASSERT_EQ(sample.received_streams.size(), 1u);
  EXPECT_EQ(sample.received_streams[0].peer, 3u);
  EXPECT_EQ(sample.received_streams[0].start_seconds, 0.005);
  EXPECT_TRUE(sample.sent_streams.empty());
  for (double bad : {kNaN, -1.0, kInf}) {
    stream->set_seconds(bad);
    EXPECT_FALSE(CheckTransfers(t).ok()) << bad;
    stream->set_seconds(0.01);
    stream->set_start_seconds(bad);
    EXPECT_FALSE(CheckTransfers(t).ok()) << bad;
    stream->set_start_seconds(0.005);
    stream->set_bytes(bad);
    EXPECT_FALSE(CheckTransfers(t).ok()) << bad;
    stream->set_bytes(4e5);
  }
  for (int i = 0; i < kMaxReportedStreams; ++i) *t.add_sent_streams() = *stream;
  EXPECT_TRUE(CheckTransfers(t).ok());
  *t.add_sent_streams() = *stream;
  EXPECT_FALSE(CheckTransfers(t).ok()) << "one stream too many";

  EXPECT_TRUE(CheckAccuracy(0, 0).ok());
  EXPECT_TRUE(CheckAccuracy(1, 2.5).ok());
  for (double bad : {kNaN, -0.01, 1.01, kInf}) EXPECT_FALSE(CheckAccuracy(bad, 0).ok()) << bad;
  EXPECT_FALSE(CheckAccuracy(0.9, -1).ok());
  EXPECT_FALSE(CheckAccuracy(0.9, kNaN).ok());
}

}  // namespace
}  // namespace syncopate::coordinator
