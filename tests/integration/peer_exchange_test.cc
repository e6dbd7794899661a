// The peer-to-peer data plane over real gRPC on 127.0.0.1: models streamed between trainers,
// shapes checked, one model per sender and round, deadlines for dead peers, link-rate limits,
// background multicasts that go on until delivered, preempted or superseded on their pair.
#include "client/peer_exchange.h"

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "base/clock.h"
#include "client/background_multicast.h"
#include "grpcpp/generic/async_generic_service.h"
#include "gtest/gtest.h"
#include "held_port.h"
#include "rpc/grpc_util.h"
#include "tensor/compression.h"
#include "watchdog_sweep.h"

namespace syncopate::client {
namespace {

tensor::TensorMap Model(float value, size_t n = 1000) {
  return {{"b", std::vector<float>(10, value)}, {"w", std::vector<float>(n, value)}};
}

// One trainer's receiving side on `address` (default 127.0.0.1:0).
struct Receiver {
  explicit Receiver(const tensor::TensorMap& shape, base::TokenBucket* ingress = nullptr,
                    const std::string& address = "127.0.0.1:0",
                    absl::Duration stream_idle_timeout = absl::ZeroDuration(),
                    const base::Clock& clock = base::MonotonicClock::Get())
      : watchdog(stream_idle_timeout, clock),
        service(inbox, ShapeLookup(shape), ingress, received,
                rpc::Authorizer(rpc::Credentials::Insecure(), nullptr), &watchdog) {
    EXPECT_TRUE(
        rpc::StartServer(address, {&service}, rpc::Credentials::Insecure(), &server, &port).ok());
  }
  // As a trainer stops (PeerNode): senders' streams idle between two models end at once.
  ~Receiver() {
    watchdog.Drain();
    server->Shutdown();
  }
  v1::PeerRef Ref(uint64_t id) const {
    v1::PeerRef ref;
    ref.set_trainer_id(id);
    ref.set_address("127.0.0.1:" + std::to_string(port));
    return ref;
  }
  rpc::StreamWatchdog watchdog;
  ExchangeInbox inbox;
  TransferMeter received;
  PeerService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// The peer data plane's deadlines are times of base::MonotonicClock (client/peer_link.h).
absl::Time Now() { return base::MonotonicClock::Get().Now(); }
absl::Time In(absl::Duration d) { return Now() + d; }

TEST(PeerExchangeTest, ModelsArriveByRoundAndSender) {
  Receiver r(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  for (uint64_t id : {7, 8}) {
    auto results = sender.SendToAll({r.Ref(1)}, id, /*round=*/3, tensor::Share(Model(id)), 1.0,
                                    In(absl::Seconds(10)));
    ASSERT_TRUE(results[0].ok()) << results[0];
  }
  auto got = r.inbox.Collect(3, {7, 8}, In(absl::Seconds(10)));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[7].model, Model(7));
  EXPECT_EQ(got[8].model, Model(8));
  EXPECT_EQ(got[7].mass, 1.0);
  const TransferTotals totals = sent.Take();
  EXPECT_EQ(totals.bytes, 2 * 1010 * 4.0);
  EXPECT_EQ(totals.transfers, 2);
  EXPECT_EQ(r.received.Take().bytes, 2 * 1010 * 4.0);
}

// A sender's models to one peer go one after another on one long-lived stream; with
// Transport::kCall, each on an Exchange call of its own. Either way every model arrives.
TEST(PeerExchangeTest, ModelsToAPeerShareOneStream) {
  for (Transport transport : {Transport::kStream, Transport::kCall}) {
    Receiver r(Model(0));
    TransferMeter sent;
    PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
    sender.SetTransport(transport);
    for (int64_t round : {1, 2, 3}) {
      auto results = sender.SendToAll({r.Ref(1)}, 7, round, tensor::Share(Model(round)), 1.0,
                                      In(absl::Seconds(10)));
      ASSERT_TRUE(results[0].ok()) << results[0];
      auto got = r.inbox.Collect(round, {7}, In(absl::Seconds(10)));
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[7].model, Model(round));
    }
    // The streams still open, idle between two models, end as the receiver stops.
    EXPECT_EQ(r.watchdog.Drain(), transport == Transport::kStream ? 1 : 0);
  }
}

// The receiver's watchdog cancels a stream quiet between two models, or the receiver restarts:
// the next model goes on a new stream, within its deadline, without an error.
TEST(PeerExchangeTest, AStreamEndedWhileIdleIsReplacedAtOnce) {
  base::FakeClock clock;
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  auto r = std::make_unique<Receiver>(Model(0), nullptr, "127.0.0.1:0", absl::Seconds(60), clock);
  const v1::PeerRef peer = r->Ref(1);
  ASSERT_TRUE(
      sender.SendToAll({peer}, 7, 1, tensor::Share(Model(1)), 1.0, In(absl::Seconds(10)))[0].ok());
  ASSERT_EQ(SweepUntilCancelled(clock, r->watchdog), 1);
  absl::Status second =
      sender.SendToAll({peer}, 7, 2, tensor::Share(Model(2)), 1.0, In(absl::Seconds(10)))[0];
  ASSERT_TRUE(second.ok()) << second;
  EXPECT_EQ(r->inbox.Collect(2, {7}, In(absl::Seconds(10)))[7].model, Model(2));
  // Restarted on its port, with the stream idle: the third model reaches the new receiver.
  const std::string address = peer.address();
  rpc::StopServer(*r->server);
  r = std::make_unique<Receiver>(Model(0), nullptr, address);
  absl::Status third =
      sender.SendToAll({peer}, 7, 3, tensor::Share(Model(3)), 1.0, In(absl::Seconds(10)))[0];
  ASSERT_TRUE(third.ok()) << third;
  EXPECT_EQ(r->inbox.Collect(3, {7}, In(absl::Seconds(10)))[7].model, Model(3));
  EXPECT_EQ(sender.setup_retries(), 0) << "the stream was replaced at once, not after a backoff";
}

// A peer whose streams follow a script: for each stream, in the order they open, what it does at
// the end of each model on it: reply (OK), or end the stream with the status given.
class ScriptedPeer : public grpc::CallbackGenericService {
 public:
  explicit ScriptedPeer(std::vector<std::vector<grpc::Status>> script)
      : script_(std::move(script)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(this);
    server_ = builder.BuildAndStart();
  }
  ~ScriptedPeer() override { rpc::StopServer(*server_); }
  v1::PeerRef Ref(uint64_t id) const {
    v1::PeerRef ref;
    ref.set_trainer_id(id);
    ref.set_address("127.0.0.1:" + std::to_string(port_));
    return ref;
  }
  int streams() const {
    absl::MutexLock lock(&mu_);
    return streams_;
  }

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    absl::MutexLock lock(&mu_);
    const size_t stream = streams_++;
    return new Stream(stream < script_.size() ? script_[stream] : std::vector<grpc::Status>{});
  }

 private:
  class Stream : public grpc::ServerGenericBidiReactor {
   public:
    explicit Stream(std::vector<grpc::Status> ends) : ends_(std::move(ends)) { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      v1::PeerTransferRequest request;
      if (!grpc::SerializationTraits<v1::PeerTransferRequest>::Deserialize(&in_, &request).ok()) {
        return Finish(grpc::Status(grpc::StatusCode::INTERNAL, "not a peer transfer message"));
      }
      if (!request.has_model_end()) return StartRead(&in_);
      if (models_ == ends_.size()) {
        return Finish(grpc::Status(grpc::StatusCode::INTERNAL, "past the script"));
      }
      const grpc::Status end = ends_[models_++];
      if (!end.ok()) return Finish(end);
      out_ = rpc::EncodeMessage(v1::ExchangeReply());
      StartWrite(&out_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      StartRead(&in_);
    }
    void OnDone() override { delete this; }

   private:
    const std::vector<grpc::Status> ends_;
    size_t models_ = 0;
    grpc::ByteBuffer in_;
    grpc::ByteBuffer out_;
  };

  const std::vector<std::vector<grpc::Status>> script_;
  mutable absl::Mutex mu_;
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A stream breaks after the peer took a model, its reply lost; the stream's one reopen sends the
// model again, and the peer refuses it as a repeat of its round, as PeerService does: it arrived,
// and the send is reported delivered.
TEST(PeerExchangeTest, AModelSentAgainAfterItsReplyWasLostIsDelivered) {
  const grpc::Status reply = grpc::Status::OK;
  const grpc::Status lost(grpc::StatusCode::UNAVAILABLE, "the reply was lost");
  const grpc::Status repeat(grpc::StatusCode::ALREADY_EXISTS, "round 2 was delivered");
  ScriptedPeer peer({{reply, lost}, {repeat}});
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  for (int64_t round : {1, 2}) {
    const absl::Status status = sender.SendToAll(
        {peer.Ref(1)}, 7, round, tensor::Share(Model(round)), 1.0, In(absl::Seconds(10)))[0];
    ASSERT_TRUE(status.ok()) << "round " << round << ": " << status;
  }
  EXPECT_EQ(peer.streams(), 2);
  EXPECT_EQ(sent.Take().transfers, 2);
  EXPECT_EQ(sender.setup_retries(), 0);
}

// Under --compression=bf16 (or fp16) a model travels in half the bytes, each value the nearest the
// codec holds; top-k (deltas, not models) is refused.
TEST(PeerExchangeTest, AModelGoesInTheJobsHalfPrecision) {
  Receiver r(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  sender.SetCodec(v1::CODEC_BF16);
  const float value = 1.001f;  // bf16 holds 1.0 and 1.0078125 near it
  auto results = sender.SendToAll({r.Ref(1)}, 7, /*round=*/1, tensor::Share(Model(value)), 1.0,
                                  In(absl::Seconds(10)));
  ASSERT_TRUE(results[0].ok()) << results[0];
  auto got = r.inbox.Collect(1, {7}, In(absl::Seconds(10)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model, Model(tensor::FromBf16(tensor::ToBf16(value))));
  EXPECT_EQ(got[7].model.at("w")[0], 1.0f);
  EXPECT_EQ(sent.Take().bytes, 1010 * 2.0) << "two bytes a value";
  sender.SetCodec(v1::CODEC_TOPK);
  results = sender.SendToAll({r.Ref(1)}, 7, /*round=*/2, tensor::Share(Model(value)), 1.0,
                             In(absl::Seconds(10)));
  EXPECT_EQ(results[0].code(), absl::StatusCode::kInvalidArgument) << results[0];
  EXPECT_TRUE(absl::StrContains(results[0].message(), "not top-k")) << results[0];
}

TEST(PeerExchangeTest, WrongShapesAndRepeatsAreRefused) {
  Receiver r(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  auto wrong =
      sender.SendToAll({r.Ref(1)}, 7, 1, tensor::Share(Model(1, 999)), 1.0, In(absl::Seconds(10)));
  EXPECT_EQ(wrong[0].code(), absl::StatusCode::kInvalidArgument) << wrong[0];
  tensor::TensorMap extra = Model(1);
  extra["unknown"] = {1};
  EXPECT_EQ(sender.SendToAll({r.Ref(1)}, 7, 1, tensor::Share(extra), 1.0, In(absl::Seconds(10)))[0]
                .code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(
      sender.SendToAll({r.Ref(1)}, 7, 1, tensor::Share(Model(1)), 1.0, In(absl::Seconds(10)))[0]
          .ok());
  EXPECT_EQ(
      sender.SendToAll({r.Ref(1)}, 7, 1, tensor::Share(Model(2)), 1.0, In(absl::Seconds(10)))[0]
          .code(),
      absl::StatusCode::kAlreadyExists);
  auto got = r.inbox.Collect(1, {7}, In(absl::Seconds(10)));
  EXPECT_EQ(got.at(7).model, Model(1));  // the first one, untouched by the refused ones
  // The round is over: a late model is refused.
  EXPECT_EQ(
      sender.SendToAll({r.Ref(1)}, 9, 1, tensor::Share(Model(3)), 1.0, In(absl::Seconds(10)))[0]
          .code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(PeerExchangeTest, ADeadPeerCostsAtMostTheDeadline) {
  Receiver r(Model(0));
  v1::PeerRef dead = r.Ref(2);
  dead.set_address("127.0.0.1:1");  // nothing listens there
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  const absl::Time deadline = In(absl::Seconds(3));
  auto results = sender.SendToAll({dead, r.Ref(1)}, 7, 1, tensor::Share(Model(1)), 1.0, deadline);
  EXPECT_FALSE(results[0].ok());
  EXPECT_TRUE(results[1].ok()) << results[1];
  EXPECT_LE(Now(), deadline + absl::Seconds(1));
  // The receiver waits for a sender that never sends only until the deadline.
  const absl::Time collect_deadline = In(absl::Milliseconds(300));
  auto got = r.inbox.Collect(1, {7, 99}, collect_deadline);
  EXPECT_GE(Now(), collect_deadline);
  EXPECT_EQ(got.size(), 1u);
}

// A send whose connection is refused (the peer's server is not up yet, or its handshake was cut)
// failed before it started: it is tried again with backoff and delivered within its deadline.
// Trainer 1's round-1 model sent, in a thread of its own, to a port that refuses every
// connection until a receiver listens there.
struct SendToARefusingPort {
  explicit SendToARefusingPort(absl::Time deadline) : held(testing::HoldPort(&port)) {
    EXPECT_GE(held, 0);
    peer.set_trainer_id(1);
    peer.set_address(address());
    sending = std::thread([this, deadline] {
      results = sender.SendToAll({peer}, 7, /*round=*/1, tensor::Share(Model(7)), 1.0, deadline);
    });
  }
  ~SendToARefusingPort() {
    if (sending.joinable()) sending.join();
    close(held);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  // Waits (polling a counter, within 10 s) until a send was refused and is to be tried again.
  void AwaitARetry() {
    const absl::Time give_up = In(absl::Seconds(10));
    while (sender.setup_retries() == 0 && Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
    EXPECT_GE(sender.setup_retries(), 1) << "the first connection was not refused";
  }

  int port = 0;
  const int held;
  v1::PeerRef peer;
  TransferMeter sent;
  PeerSender sender{nullptr, sent, rpc::Credentials::Insecure()};
  std::vector<absl::Status> results;
  std::thread sending;
};

TEST(PeerExchangeTest, ASendRefusedAtConnectionSetUpIsRetriedWithinItsDeadline) {
  SendToARefusingPort send(In(absl::Seconds(20)));
  // The first attempt is refused; the receiver comes up only after it.
  send.AwaitARetry();
  Receiver r(Model(0), nullptr, send.address());
  send.sending.join();
  const std::vector<absl::Status>& results = send.results;
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0];
  auto got = r.inbox.Collect(1, {7}, In(absl::Seconds(10)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model, Model(7));
}

// A peer the coordinator says left (PeerLeft) is not retried until the exchange's deadline: the
// send to it ends at once.
TEST(PeerExchangeTest, ASendToAPeerThatLeftStopsRetrying) {
  const absl::Time deadline = In(absl::Minutes(5));
  SendToARefusingPort send(deadline);  // no receiver ever listens
  send.AwaitARetry();
  send.sender.PeerLeft(1);
  send.sending.join();
  EXPECT_LT(Now(), deadline - absl::Minutes(4)) << "the send waited for its deadline";
  ASSERT_EQ(send.results.size(), 1u);
  EXPECT_FALSE(send.results[0].ok());
}

TEST(PeerExchangeTest, AGoneSenderIsNotWaitedFor) {
  ExchangeInbox inbox;
  ASSERT_TRUE(inbox.Deposit(5, 7, Model(1)).ok());
  const absl::Time deadline = In(absl::Seconds(60));
  std::thread leaver([&] {
    absl::SleepFor(absl::Milliseconds(100));
    inbox.MarkGone(8);  // trainer 8 left while round 5 waits for it
  });
  auto got = inbox.Collect(5, {7, 8}, deadline);
  leaver.join();
  EXPECT_LT(Now(), deadline) << "waited out the deadline for a trainer that left";
  EXPECT_EQ(got.size(), 1u);
  // A round planned later waits for the id again (it may have rejoined).
  const absl::Time short_deadline = In(absl::Milliseconds(200));
  EXPECT_TRUE(inbox.Collect(7, {8}, short_deadline).empty());
  EXPECT_GE(Now(), short_deadline);
  // Gone between rounds: the next round does not wait for it.
  inbox.MarkGone(9);
  const absl::Time next_deadline = In(absl::Seconds(60));
  EXPECT_TRUE(inbox.Collect(8, {9}, next_deadline).empty());
  EXPECT_LT(Now(), next_deadline);
}

TEST(PeerExchangeTest, LinkRatesHoldTheTransfersBack) {
  // 4 MB through a 2 MB/s ingress: the receiving side may not take it faster than that.
  base::TokenBucket ingress(2e6, 64e3, base::MonotonicClock::Get());
  Receiver r(Model(0, 1000000), &ingress);
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  ASSERT_TRUE(sender
                  .SendToAll({r.Ref(1)}, 7, 1, tensor::Share(Model(1, 1000000)), 1.0,
                             In(absl::Seconds(30)))[0]
                  .ok());
  const TransferTotals received = r.received.Take();
  EXPECT_GT(received.bytes, 4e6);
  EXPECT_LE(received.bytes / received.seconds, 2e6 * 1.1);
  // The same through a 2 MB/s egress.
  Receiver fast(Model(0, 1000000));
  base::TokenBucket egress(2e6, 64e3, base::MonotonicClock::Get());
  PeerSender limited(&egress, sent, rpc::Credentials::Insecure());
  ASSERT_TRUE(limited
                  .SendToAll({fast.Ref(1)}, 7, 1, tensor::Share(Model(1, 1000000)), 1.0,
                             In(absl::Seconds(30)))[0]
                  .ok());
  const TransferTotals totals = sent.Take();
  EXPECT_LE(totals.bytes / totals.seconds, 2e6 * 1.1);
}

// Polls until `count` transfers ended (at most 10 s) and returns their outcomes.
BackgroundMulticast::Outcomes WaitOutcomes(BackgroundMulticast& multicast, int count) {
  BackgroundMulticast::Outcomes all;
  const absl::Time deadline = In(absl::Seconds(10));
  while (all.delivered + all.failed + all.cancelled < count && Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
    const BackgroundMulticast::Outcomes more = multicast.Take();
    all.delivered += more.delivered;
    all.failed += more.failed;
    all.cancelled += more.cancelled;
  }
  return all;
}

TEST(BackgroundMulticastTest, DeliversToEveryReceiverInTheBackground) {
  Receiver a(Model(0)), b(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  BackgroundMulticast multicast(sender);
  multicast.Start({a.Ref(1), b.Ref(2)}, 7, 1, Model(1), 0.5, In(absl::Seconds(10)));
  EXPECT_EQ(WaitOutcomes(multicast, 2).delivered, 2);
  EXPECT_EQ(a.inbox.TakeLatest()[7].model, Model(1));
  EXPECT_EQ(b.inbox.TakeLatest()[7].model, Model(1));
  EXPECT_EQ(sent.Take().transfers, 2);
}

constexpr size_t kLarge = 1000000;  // floats: 4 MB

// A background multicast's sender, and two receivers of 4 MB models: `slow` behind a 2 MB/s
// ingress (about 2 s per model), `fast` unlimited. With 1 MB models, a transfer cancelled at
// once was once deposited whole anyway, under load (a fresh clone's test run): the receiver may
// take a model whose sender saw CANCELLED (see docs/modes.md, selmcast-ssp).
struct SlowAndFastReceivers {
  base::TokenBucket ingress{2e6, 64e3, base::MonotonicClock::Get()};
  Receiver slow{Model(0, kLarge), &ingress};
  Receiver fast{Model(0, kLarge)};
  TransferMeter sent;
  PeerSender sender{nullptr, sent, rpc::Credentials::Insecure()};
  BackgroundMulticast multicast{sender};
};

// 4 MB into a 2 MB/s ingress takes about 2 s: the trainer's next multicast, to another
// receiver, starts long before, and leaves it running.
TEST(BackgroundMulticastTest, AMulticastGoesOnPastTheNextOne) {
  SlowAndFastReceivers r;
  r.multicast.Start({r.slow.Ref(1)}, 7, 1, Model(1, kLarge), 0.5, In(absl::Seconds(30)));
  r.multicast.Start({r.fast.Ref(2)}, 7, 2, Model(2, kLarge), 0.5, In(absl::Seconds(30)));
  const BackgroundMulticast::Outcomes outcomes = WaitOutcomes(r.multicast, 2);
  EXPECT_EQ(outcomes.delivered, 2);
  EXPECT_EQ(outcomes.cancelled, 0);
  EXPECT_EQ(r.slow.inbox.TakeLatest()[7].model, Model(1, kLarge));
  EXPECT_EQ(r.fast.inbox.TakeLatest()[7].model, Model(2, kLarge));
}

v1::PeerRef LowPriority(v1::PeerRef ref) {
  ref.set_low_priority(true);
  return ref;
}

// When each of the sender's transfers ended (TransferMeter's times), by peer.
std::map<uint64_t, double> EndsByPeer(TransferMeter& meter) {
  std::map<uint64_t, double> ends;
  for (const StreamTimes& s : meter.Take().streams) ends[s.peer] = s.start_seconds + s.seconds;
  return ends;
}

// Without an emulated egress rate a low-priority transfer (a Pareto addition) sends nothing while
// a required one runs: the model to the fast receiver, which alone would take milliseconds, ends
// after the 2 s one to the slow receiver.
TEST(PeerExchangeTest, ALowPriorityTransferYieldsToTheRequiredOnes) {
  SlowAndFastReceivers r;
  const std::vector<absl::Status> results =
      r.sender.SendToAll({LowPriority(r.fast.Ref(2)), r.slow.Ref(1)}, 7, 1,
                         tensor::Share(Model(1, kLarge)), 0.5, In(absl::Seconds(30)));
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  std::map<uint64_t, double> ends = EndsByPeer(r.sent);
  EXPECT_GT(ends[2], ends[1]);
  EXPECT_EQ(r.fast.inbox.Collect(1, {7}, In(absl::Seconds(1)))[7].model, Model(1, kLarge));
}

// With an emulated egress rate a low-priority transfer takes the rate the required ones leave
// idle: while the required transfer waits on its slow receiver (2 MB/s into a 20 MB/s upload),
// the addition to the fast one goes ahead and ends first.
TEST(PeerExchangeTest, ALowPriorityTransferUsesTheIdleEgressRate) {
  SlowAndFastReceivers r;
  base::TokenBucket egress(20e6, 64e3, base::MonotonicClock::Get());
  PeerSender sender(&egress, r.sent, rpc::Credentials::Insecure());
  const std::vector<absl::Status> results =
      sender.SendToAll({r.slow.Ref(1), LowPriority(r.fast.Ref(2))}, 7, 1,
                       tensor::Share(Model(1, kLarge)), 0.5, In(absl::Seconds(30)));
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  std::map<uint64_t, double> ends = EndsByPeer(r.sent);
  EXPECT_LT(ends[2], ends[1]);
}

// A low-priority transfer that finds no idle upload by its deadline ends with DEADLINE_EXCEEDED,
// and one cancelled while it waits ends with CANCELLED, both from the wait itself.
TEST(PeerExchangeTest, AStarvedLowPriorityTransferEndsAtItsDeadlineOrCancel) {
  Receiver r(Model(0));
  TransferMeter sent;
  base::TokenBucket egress(2e6, 64e3, base::MonotonicClock::Get());
  PeerSender sender(&egress, sent, rpc::Credentials::Insecure());
  egress.Take(10000000);  // 5 s of debt: no idle rate for a while
  const absl::Status starved = sender.SendOne(LowPriority(r.Ref(1)), 7, 1, tensor::Share(Model(1)),
                                              0.5, In(absl::Milliseconds(200)));
  EXPECT_EQ(starved.code(), absl::StatusCode::kDeadlineExceeded) << starved;
  EXPECT_TRUE(absl::StrContains(starved.message(), "no idle upload")) << starved;
  TransferCancel cancel;
  cancel.Cancel();
  const absl::Status cancelled = sender.SendOne(
      LowPriority(r.Ref(1)), 7, 2, tensor::Share(Model(2)), 0.5, In(absl::Seconds(30)), &cancel);
  EXPECT_EQ(cancelled.code(), absl::StatusCode::kCancelled) << cancelled;
  EXPECT_TRUE(absl::StrContains(cancelled.message(), "low-priority")) << cancelled;
  EXPECT_EQ(r.received.Take().transfers, 0);
}

// A newer model to the same receiver replaces the older one still on its way; the newer
// multicast's other receivers are served as usual. The older share does not go back to the
// sender: it stays on the sender's running sums for that receiver, and the newer model carries it
// instead of a share of its own, which stays with the sender.
TEST(BackgroundMulticastTest, ANewerModelSupersedesTheOlderOnTheSamePair) {
  SlowAndFastReceivers r;
  EXPECT_EQ(r.multicast.Start({r.slow.Ref(1)}, 7, 1, Model(1, kLarge), 0.5, In(absl::Seconds(30))),
            0);
  EXPECT_EQ(r.multicast.Start({r.slow.Ref(1), r.fast.Ref(2)}, 7, 2, Model(2, kLarge), 0.25,
                              In(absl::Seconds(30))),
            0.25)
      << "a share is still on its way to slow";
  const BackgroundMulticast::Outcomes outcomes = WaitOutcomes(r.multicast, 3);
  EXPECT_EQ(outcomes.cancelled, 1);
  EXPECT_EQ(outcomes.delivered, 2);
  auto got = r.slow.inbox.TakeLatest();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model, Model(2, kLarge)) << "only the newer model arrived";
  EXPECT_EQ(got[7].mass, 0.5) << "with the older one's share";
  EXPECT_EQ(r.fast.inbox.TakeLatest()[7].model, Model(2, kLarge));
}

TEST(BackgroundMulticastTest, APreemptedTransferStopsAndDepositsNothing) {
  // 4 MB into a 1 MB/s ingress: the transfer to `slow` takes about 4 s unless it is preempted.
  base::TokenBucket ingress(1e6, 64e3, base::MonotonicClock::Get());
  Receiver slow(Model(0, 1000000), &ingress), fast(Model(0, 1000000));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  BackgroundMulticast multicast(sender);
  multicast.Start({slow.Ref(1), fast.Ref(2)}, 7, 5, Model(5, 1000000), 0.5, In(absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(300));
  multicast.Stop(4, {1});  // a stale round: ignored
  multicast.Stop(5, {1});
  const BackgroundMulticast::Outcomes outcomes = WaitOutcomes(multicast, 2);
  EXPECT_EQ(outcomes.delivered, 1);
  EXPECT_EQ(outcomes.cancelled, 1);
  EXPECT_EQ(outcomes.failed, 0);
  EXPECT_TRUE(slow.inbox.TakeLatest().empty());
  auto got = fast.inbox.TakeLatest();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].model, Model(5, 1000000));
  EXPECT_EQ(got[7].mass, 0.5);
}

// A share is never counted twice nor lost on the way: over many multicasts that supersede each
// other on one pair, cancelled at every point of their transfers (some as they end, after the
// receiver took the model), the receiver is credited exactly the mass the sender gave once the
// last model arrived, and a pair never holds more than one share in flight. (When a cancelled
// transfer's share went back to its sender, the receiver could also take it, and a selmcast-ssp
// job's masses grew until they overflowed.)
TEST(BackgroundMulticastTest, SupersededTransfersNeitherLoseNorDoubleTheirMass) {
  constexpr size_t kMlp = 100000;  // floats: 400 KB, the MLP's size
  constexpr int kMulticasts = 300;
  Receiver r(Model(0, kMlp));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  BackgroundMulticast multicast(sender);
  double taken = 0;
  std::atomic<bool> sending{true};
  std::thread receiving([&] {
    // Drains the inbox, so that its bound refuses nothing.
    while (sending.load()) {
      for (const auto& [from, model] : r.inbox.TakeLatest(In(absl::Milliseconds(20)))) {
        taken += model.mass;
      }
    }
  });
  double kept = 0;  // shares not given: one was on its way already
  for (int round = 1; round <= kMulticasts; ++round) {
    kept += multicast.Start({r.Ref(1)}, 7, round, Model(round, kMlp), 1.0, In(absl::Seconds(30)));
    // Jitter, not synchronisation: the next Start cancels this transfer at varied points.
    absl::SleepFor(absl::Microseconds(round % 16 * 60));
  }
  // The last one is not superseded: it arrives, and carries every share still owed.
  const BackgroundMulticast::Outcomes outcomes = WaitOutcomes(multicast, kMulticasts);
  sending = false;
  receiving.join();
  for (const auto& [from, model] : r.inbox.TakeLatest()) taken += model.mass;
  EXPECT_EQ(outcomes.delivered + outcomes.failed + outcomes.cancelled, kMulticasts);
  EXPECT_GT(outcomes.cancelled, 0) << "nothing was superseded: the test shows nothing";
  EXPECT_GT(kept, 0);
  EXPECT_EQ(taken + kept, kMulticasts) << outcomes.delivered << " delivered, " << outcomes.cancelled
                                       << " cancelled, " << outcomes.failed << " failed";
}

// The coordinator may preempt a multicast before the trainer starts it (it starts after the step
// that follows its grant): the stop is kept, and the multicast leaves that receiver out.
TEST(BackgroundMulticastTest, AStopBeforeTheStartIsKept) {
  Receiver a(Model(0)), b(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  BackgroundMulticast multicast(sender);
  multicast.Stop(3, {1});
  EXPECT_EQ(multicast.Start({a.Ref(1), b.Ref(2)}, 7, 3, Model(3), 0.25, In(absl::Seconds(10))),
            0.25)
      << "the stopped share never left";
  const BackgroundMulticast::Outcomes outcomes = WaitOutcomes(multicast, 2);
  EXPECT_EQ(outcomes.delivered, 1);
  EXPECT_EQ(outcomes.cancelled, 1);
  EXPECT_TRUE(a.inbox.TakeLatest().empty());
  EXPECT_EQ(b.inbox.TakeLatest()[7].model, Model(3));
  // Spent: the next multicast of another round goes to receiver 1 again.
  multicast.Start({a.Ref(1)}, 7, 4, Model(4), 0.5, In(absl::Seconds(10)));
  EXPECT_EQ(WaitOutcomes(multicast, 1).delivered, 1);
  EXPECT_EQ(a.inbox.TakeLatest()[7].model, Model(4));
}

TEST(ExchangeInboxTest, TakeLatestKeepsEachSendersNewestRound) {
  ExchangeInbox inbox;
  ASSERT_TRUE(inbox.Deposit(3, 7, Model(3)).ok());
  ASSERT_TRUE(inbox.Deposit(5, 7, Model(5)).ok());
  ASSERT_TRUE(inbox.Deposit(4, 8, Model(4)).ok());
  auto latest = inbox.TakeLatest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[7].model, Model(5));
  EXPECT_EQ(latest[8].model, Model(4));
  EXPECT_TRUE(inbox.TakeLatest().empty());
}

// The mass a model carries crosses the wire; a negative or infinite one is refused.
TEST(PeerExchangeTest, AModelCarriesItsMass) {
  Receiver r(Model(0));
  TransferMeter sent;
  PeerSender sender(nullptr, sent, rpc::Credentials::Insecure());
  ASSERT_TRUE(
      sender.SendToAll({r.Ref(1)}, 7, 1, tensor::Share(Model(7)), 0.25, In(absl::Seconds(10)))[0]
          .ok());
  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    EXPECT_EQ(
        sender.SendToAll({r.Ref(1)}, 8, 1, tensor::Share(Model(8)), bad, In(absl::Seconds(10)))[0]
            .code(),
        absl::StatusCode::kInvalidArgument)
        << bad;
  }
  auto got = r.inbox.Collect(1, {7, 8}, In(absl::Seconds(1)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[7].mass, 0.25);
}

}  // namespace
}  // namespace syncopate::client
