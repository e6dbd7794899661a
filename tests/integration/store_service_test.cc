// A real store server on 127.0.0.1:0, driven by the trainer's StoreClient and by raw streams.
#include "store/store_service.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "base/clock.h"
#include "base/status_macros.h"
#include "client/store_client.h"
#include "client/trainer_metrics.h"
#include "gtest/gtest.h"
#include "local_store.h"
#include "prometheus/registry.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"
#include "tensor/compression.h"
#include "tensor/tensor.h"
#include "thread_count.h"

namespace syncopate {
namespace {

constexpr uint64_t kTrainer = 7;

// A membership of trainer `trainer` (incarnation 1) alone, under `mode`.
v1::Membership OneTrainer(v1::ApplyMode mode, uint64_t trainer = kTrainer) {
  v1::Membership m;
  v1::Member* member = m.add_members();
  member->set_trainer_id(trainer);
  member->set_incarnation(1);
  m.set_apply_mode(mode);
  return m;
}

class StoreServiceTest : public ::testing::Test {
 protected:
  // Sends `membership` to the shard; the status code.
  grpc::StatusCode SetMembership(const v1::Membership& membership) {
    grpc::ClientContext ctx;
    v1::SetMembershipReply reply;
    return stub_->SetMembership(&ctx, membership, &reply).error_code();
  }

  void SetUp() override {
    ASSERT_TRUE(store_.Start().ok());
    address_ = store_.address();
    client_ = std::make_unique<client::StoreClient>(
        std::vector<std::string>{address_}, rpc::Credentials::Insecure(), absl::Seconds(10));
    client_->set_metrics(&trainer_metrics_);
    stub_ = v1::ParameterStore::NewStub(
        rpc::MakeChannel(address_, rpc::Credentials::Insecure(), rpc::Role::kStore));
    store_.table.SetMembers({{kTrainer, 1}});
    model_["big"] = std::vector<float>(3'000'000);  // 12 MiB: needs chunking under 4 MiB limits
    for (size_t i = 0; i < model_["big"].size(); ++i) model_["big"][i] = 0.001f * (i % 1000);
    model_["small"] = {1, 2, 3};
    ASSERT_TRUE(client_->Initialize(Header(0), model_).ok());
  }
  void TearDown() override {
    store_.Stop();
    store_.server.reset();  // before a restarted shard's service goes
  }

  static v1::PushHeader Header(uint64_t sequence, uint64_t trainer = kTrainer,
                               uint64_t incarnation = 1) {
    v1::PushHeader h;
    h.set_trainer_id(trainer);
    h.set_incarnation(incarnation);
    h.set_sequence(sequence);
    h.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
    h.set_weight(1);
    return h;
  }

  tensor::TensorMap Live() {
    absl::StatusOr<client::PulledModel> pulled = client_->Pull(-1);
    EXPECT_TRUE(pulled.ok()) << pulled.status();
    return pulled.ok() ? pulled->tensors : tensor::TensorMap{};
  }

  // Sends raw messages as one Push stream and returns the status code.
  grpc::StatusCode RawPush(const std::vector<v1::PushMessage>& messages) {
    grpc::ClientContext ctx;
    v1::PushReply reply;
    auto writer = stub_->Push(&ctx, &reply);
    for (const auto& m : messages) writer->Write(m);
    writer->WritesDone();
    return writer->Finish().error_code();
  }

  // The shard's next process (incarnation 2), its table the test's to restore.
  struct RestartedShard {
    RestartedShard()
        : service(table, metrics, 0, 1, /*incarnation=*/2,
                  rpc::Authorizer(rpc::Credentials::Insecure(), nullptr)) {}
    prometheus::Registry registry;
    store::StoreMetrics metrics{registry};
    store::ParameterTable table;
    store::StoreService service;
  };
  // Stops the shard's process and returns its successor, not serving yet (Serve).
  RestartedShard& Restart() {
    rpc::StopServer(*store_.server);
    restarted_ = std::make_unique<RestartedShard>();
    return *restarted_;
  }
  // Serves the successor on the old process's port.
  void Serve() {
    int port = 0;
    ASSERT_TRUE(rpc::StartServer(address_, {&restarted_->service}, rpc::Credentials::Insecure(),
                                 &store_.server, &port)
                    .ok());
    ASSERT_EQ(port, store_.port);
  }

  LocalStore store_;
  std::unique_ptr<RestartedShard> restarted_;
  std::string address_;
  prometheus::Registry trainer_registry_;
  client::TrainerMetrics trainer_metrics_{trainer_registry_};  // client_'s, as a trainer's
  std::unique_ptr<client::StoreClient> client_;
  std::unique_ptr<v1::ParameterStore::Stub> stub_;
  tensor::TensorMap model_;
};

TEST_F(StoreServiceTest, OpenStreamsHoldNoThreadEach) {
  // 200 push streams that send their header and then wait: a thread-per-stream server would hold
  // 200 threads until they end.
  const int before = ThreadCount();
  constexpr int kStreams = 200;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<v1::PushReply> replies(kStreams);
  std::vector<std::unique_ptr<grpc::ClientWriter<v1::PushMessage>>> writers;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(rpc::ContextWithTimeout(absl::Seconds(30)));
    writers.push_back(stub_->Push(contexts.back().get(), &replies[i]));
    v1::PushMessage header;
    *header.mutable_header() = Header(100 + i);
    tensor::ToProto({"small", {3}}, header.mutable_header()->add_tensors());
    ASSERT_TRUE(writers.back()->Write(header));
  }
  // Every stream has reached the server (polled, with a deadline).
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (store_.metrics.streams_open.Value() < kStreams && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(store_.metrics.streams_open.Value(), kStreams);
  EXPECT_LT(ThreadCount() - before, 32) << "threads before: " << before;
  for (auto& ctx : contexts) ctx->TryCancel();
  for (auto& writer : writers) EXPECT_FALSE(writer->Finish().ok());
  const absl::Time drained = absl::Now() + absl::Seconds(20);
  while (store_.metrics.streams_open.Value() > 0 && absl::Now() < drained) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(store_.metrics.streams_open.Value(), 0);
  EXPECT_EQ(Live()["small"], (std::vector<float>{1, 2, 3}));  // nothing applied
}

// A shard served on 127.0.0.1 with server limits and a stream watchdog of the test's choosing,
// trainer kTrainer a member; and a trainer's Initialize streams to it.
struct LimitedStore {
  explicit LimitedStore(rpc::StreamWatchdog* watchdog = nullptr)
      : service(table, metrics, 0, 1, /*incarnation=*/1,
                rpc::Authorizer(rpc::Credentials::Insecure(), nullptr), watchdog) {
    table.SetMembers({{kTrainer, 1}});
  }
  ~LimitedStore() {
    if (server) rpc::StopServer(*server);
  }
  absl::Status Start(const rpc::ServerLimits& limits = {}) {
    RETURN_IF_ERROR(rpc::StartServer("127.0.0.1:0", {&service}, rpc::Credentials::Insecure(),
                                     &server, &port, limits));
    stub = v1::ParameterStore::NewStub(rpc::MakeChannel(
        "127.0.0.1:" + std::to_string(port), rpc::Credentials::Insecure(), rpc::Role::kStore));
    return absl::OkStatus();
  }

  // An Initialize stream that has sent `header` and waits.
  struct Open {
    std::unique_ptr<grpc::ClientContext> ctx;
    v1::PushReply reply;
    std::unique_ptr<grpc::ClientWriter<v1::PushMessage>> writer;
  };
  std::unique_ptr<Open> Initialize(absl::Duration timeout,
                                   const tensor::TensorSpec& spec = {"w", {3}}) {
    auto open = std::make_unique<Open>();
    open->ctx = rpc::ContextWithTimeout(timeout);
    open->writer = stub->Initialize(open->ctx.get(), &open->reply);
    v1::PushMessage header;
    header.mutable_header()->set_trainer_id(kTrainer);
    header.mutable_header()->set_incarnation(1);
    tensor::ToProto(spec, header.mutable_header()->add_tensors());
    open->writer->Write(header);
    return open;
  }
  // Waits until `n` streams are open on the store (polled, with a deadline).
  bool StreamsOpen(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (metrics.streams_open.Value() < n && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return metrics.streams_open.Value() == n;
  }

  prometheus::Registry registry;
  store::StoreMetrics metrics{registry};
  store::ParameterTable table;
  store::StoreService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<v1::ParameterStore::Stub> stub;
};

// --max-message-bytes: a message over the limit is refused before the store sees it, and the limit
// cannot be set below the largest chunk.
TEST(StoreMessageLimitTest, ALargerMessageIsRefused) {
  LimitedStore store;
  rpc::ServerLimits limits;
  limits.max_message_bytes = rpc::kMinMessageBytes - 1;
  EXPECT_EQ(store.Start(limits).code(), absl::StatusCode::kInvalidArgument);
  limits.max_message_bytes = rpc::kMinMessageBytes;
  ASSERT_TRUE(store.Start(limits).ok());
  auto big =
      store.Initialize(absl::Seconds(30), {std::string(rpc::kMinMessageBytes + 1, 'x'), {1}});
  big->writer->WritesDone();
  EXPECT_EQ(big->writer->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(store.table.Specs().empty());
}

// --stream-idle-timeout: a stream that opens and goes quiet is cancelled when the watchdog next
// sweeps (driven here by hand, on a fake clock; the exact timing is stream_watchdog_test's).
TEST(StoreIdleStreamTest, AQuietStreamIsCancelled) {
  base::FakeClock clock;
  int counted = 0;
  rpc::StreamWatchdog watchdog(absl::Seconds(60), clock, [&] { ++counted; });
  LimitedStore store(&watchdog);
  ASSERT_TRUE(store.Start().ok());
  auto quiet = store.Initialize(absl::Seconds(30));
  EXPECT_EQ(SweepUntilCancelled(clock, watchdog), 1);
  EXPECT_EQ(counted, 1);
  EXPECT_EQ(quiet->writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(store.table.Specs().empty()) << "nothing was initialized";
}

// --max-streams-per-connection: one connection holds at most that many streams open; the next
// waits in the client (here until its deadline) and goes ahead once one ends.
TEST(StoreStreamLimitTest, AConnectionHoldsAtMostItsStreams) {
  LimitedStore store;
  rpc::ServerLimits limits;
  limits.max_streams_per_connection = 0;
  EXPECT_EQ(store.Start(limits).code(), absl::StatusCode::kInvalidArgument);
  limits.max_streams_per_connection = 2;
  ASSERT_TRUE(store.Start(limits).ok());
  std::vector<std::unique_ptr<LimitedStore::Open>> held;
  for (int i = 0; i < 2; ++i) held.push_back(store.Initialize(absl::Seconds(30)));
  ASSERT_TRUE(store.StreamsOpen(2));
  auto third = store.Initialize(absl::Seconds(1));
  third->writer->WritesDone();
  EXPECT_EQ(third->writer->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(store.metrics.streams_open.Value(), 2) << "the third never reached the store";
  held[0]->ctx->TryCancel();
  EXPECT_FALSE(held[0]->writer->Finish().ok());
  auto fourth = store.Initialize(absl::Seconds(10));
  fourth->writer->WritesDone();
  // It reached the store once a place was free: the store answers (the push is incomplete).
  EXPECT_EQ(fourth->writer->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  held[1]->ctx->TryCancel();
  held[1]->writer->Finish();
}

TEST_F(StoreServiceTest, ServesHealthAndRoundTripsLargeTensors) {
  EXPECT_TRUE(
      rpc::CheckHealth(*rpc::MakeChannel(address_, rpc::Credentials::Insecure(), rpc::Role::kStore),
                       absl::Seconds(5))
          .ok());
  EXPECT_EQ(Live(), model_);
  tensor::TensorMap delta = {{"big", std::vector<float>(3'000'000, 0.5f)}, {"small", {1, 1, 1}}};
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share(delta)).ok());
  tensor::TensorMap live = Live();
  EXPECT_FLOAT_EQ(live["big"][1234], model_["big"][1234] + 0.5f);
  EXPECT_EQ(live["small"], (std::vector<float>{2, 3, 4}));
  // The same push again (a retry) changes nothing.
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share(delta)).ok());
  EXPECT_EQ(Live(), live);
}

TEST_F(StoreServiceTest, EveryBadPushGetsItsErrorAndLeavesTheModelUntouched) {
  const tensor::TensorMap before = Live();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* what;
    v1::PushHeader header;
    tensor::TensorMap delta;
    absl::StatusCode code;
  };
  std::vector<Case> cases = {
      {"unknown tensor", Header(1), {{"nope", {1}}}, absl::StatusCode::kNotFound},
      {"wrong length", Header(2), {{"small", {1, 2}}}, absl::StatusCode::kInvalidArgument},
      {"NaN", Header(3), {{"small", {1, nan, 3}}}, absl::StatusCode::kInvalidArgument},
      {"Inf", Header(4), {{"small", {inf, 0, 0}}}, absl::StatusCode::kInvalidArgument},
      {"unknown trainer",
       Header(5, 99),
       {{"small", {1, 1, 1}}},
       absl::StatusCode::kUnauthenticated},
      {"stale incarnation",
       Header(6, kTrainer, 0),
       {{"small", {1, 1, 1}}},
       absl::StatusCode::kFailedPrecondition},
  };
  for (const Case& c : cases) {
    absl::StatusOr<uint64_t> pushed = client_->Push(c.header, tensor::Share(c.delta));
    EXPECT_EQ(pushed.status().code(), c.code) << c.what << ": " << pushed.status();
    EXPECT_FALSE(pushed.status().message().empty()) << c.what;
    EXPECT_EQ(Live(), before) << c.what;
  }
  const std::string text = [&] {
    std::string out;
    for (const auto& f : store_.registry.Collect()) {
      if (f.name == "syncopate_store_requests_rejected_total")
        out += std::to_string(f.metric.size());
    }
    return out;
  }();
  EXPECT_EQ(text, "4") << "rejections are counted by code";
}

// The shard keeps the job's end with the membership and reports it to a restarted coordinator
// (GetSchema); a bad one is refused and changes nothing, and a membership without one clears it.
TEST_F(StoreServiceTest, TheJobsEndIsKeptWithTheMembership) {
  auto set_membership = [&](std::optional<v1::JobEnd> end, uint64_t trainer = kTrainer) {
    v1::Membership m = OneTrainer(v1::APPLY_MODE_NONE, trainer);
    if (end) *m.mutable_job_end() = *end;
    return SetMembership(m);
  };
  auto schema = [&]() {
    grpc::ClientContext ctx;
    v1::Schema reply;
    EXPECT_TRUE(stub_->GetSchema(&ctx, v1::GetSchemaRequest(), &reply).ok());
    return reply;
  };
  auto kept = [&]() -> std::optional<v1::JobEnd> {
    const v1::Schema s = schema();
    if (!s.has_job_end()) return std::nullopt;
    return s.job_end();
  };
  v1::JobEnd end;
  end.set_final_round(5);
  end.set_reason("ended by an operator");
  ASSERT_EQ(set_membership(end), grpc::StatusCode::OK);
  ASSERT_TRUE(kept().has_value());
  EXPECT_EQ(kept()->final_round(), 5);
  EXPECT_EQ(kept()->reason(), "ended by an operator");
  std::vector<v1::JobEnd> bad(4, end);
  bad[0].set_final_round(0);
  bad[1].set_reason(std::string(300, 'x'));
  bad[2].set_reason("forged\nINFO line");
  bad[3].set_final_test_accuracy(std::numeric_limits<double>::quiet_NaN());
  for (const v1::JobEnd& b : bad) {
    EXPECT_EQ(set_membership(b, kTrainer + 1), grpc::StatusCode::INVALID_ARGUMENT)
        << b.DebugString();
  }
  ASSERT_TRUE(kept().has_value());
  EXPECT_EQ(kept()->final_round(), 5) << "a refused membership changes nothing";
  EXPECT_FALSE(kept()->has_final_test_accuracy());
  ASSERT_EQ(schema().members_size(), 1);
  EXPECT_EQ(schema().members(0).trainer_id(), kTrainer) << "nor the members";
  ASSERT_EQ(set_membership(std::nullopt), grpc::StatusCode::OK);
  EXPECT_FALSE(kept().has_value());
}

// The coordinator states the job's push rule with the membership; pushes are weighed by it.
TEST_F(StoreServiceTest, TheJobsRuleNotThePushDecidesHowItIsApplied) {
  auto set_membership = [&](v1::ApplyMode mode, float weight) {
    v1::Membership m = OneTrainer(mode);
    m.set_immediate_weight(weight);
    return SetMembership(m);
  };
  const tensor::TensorMap before = Live();
  for (float bad : {0.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_EQ(set_membership(v1::APPLY_MODE_IMMEDIATE, bad), grpc::StatusCode::INVALID_ARGUMENT)
        << bad;
  }
  EXPECT_EQ(set_membership(v1::APPLY_MODE_UNSPECIFIED, 1), grpc::StatusCode::INVALID_ARGUMENT)
      << "a coordinator that states no rule (an older one) is refused, not obeyed";
  ASSERT_EQ(set_membership(v1::APPLY_MODE_IMMEDIATE, 0.5f), grpc::StatusCode::OK);
  v1::PushHeader greedy = Header(1);
  greedy.set_weight(1e30f);  // a push may claim any weight: it gets the job's 1/N
  ASSERT_TRUE(client_->Push(greedy, tensor::Share({{"small", {2, 2, 2}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{2, 3, 4}));
  ASSERT_EQ(set_membership(v1::APPLY_MODE_ROUND, 1), grpc::StatusCode::OK);
  absl::StatusOr<uint64_t> immediate =
      client_->Push(Header(2), tensor::Share({{"small", {1, 1, 1}}}));
  EXPECT_EQ(immediate.status().code(), absl::StatusCode::kFailedPrecondition) << immediate.status();
  EXPECT_EQ(Live()["small"], (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(Live()["big"], before.at("big"));
}

// A job that compresses its pushes (Membership.codec): a push in the job's codec is applied as the
// values it carries, in fewer bytes; one in another codec is refused and changes nothing, but for a
// re-sent sum, which comes as float32.
TEST_F(StoreServiceTest, CompressedPushesAreAppliedAsTheyCameAndOtherCodecsRefused) {
  auto set_codec = [&](v1::Codec codec) {
    v1::Membership m = OneTrainer(v1::APPLY_MODE_IMMEDIATE);
    m.set_immediate_weight(1);
    m.set_codec(codec);
    return SetMembership(m);
  };
  uint64_t sequence = 0;
  for (const char* name : {"bf16", "fp16", "topk:0.01"}) {
    const tensor::Compression compression = *tensor::ParseCompression(name);
    ASSERT_EQ(set_codec(compression.codec), grpc::StatusCode::OK);
    tensor::TensorMap delta = {{"big", std::vector<float>(model_["big"].size())},
                               {"small", {0.1f, -0.2f, 0.3f}}};
    for (size_t i = 0; i < delta["big"].size(); ++i) delta["big"][i] = 1e-3f * ((i * 7) % 13);
    tensor::ErrorFeedback feedback(compression);
    feedback.Compress(delta);  // as a trainer's LocalModel does
    const tensor::TensorMap before = Live();
    v1::PushHeader header = Header(++sequence);
    header.set_codec(compression.codec);
    absl::StatusOr<uint64_t> sent = client_->Push(header, tensor::Share(delta));
    ASSERT_TRUE(sent.ok()) << name << ": " << sent.status();
    const uint64_t raw = (delta["big"].size() + 3) * sizeof(float);
    EXPECT_LE(*sent, compression.codec == v1::CODEC_TOPK ? raw / 40 : raw / 2 + 64) << name;
    const tensor::TensorMap after = Live();
    for (const auto& [tensor, values] : delta) {
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(after.at(tensor)[i], before.at(tensor)[i] + values[i]) << name << " " << tensor;
      }
    }
    // Another codec, or none, is refused whole.
    v1::PushHeader other = Header(++sequence);
    other.set_codec(compression.codec == v1::CODEC_BF16 ? v1::CODEC_FP16 : v1::CODEC_BF16);
    EXPECT_EQ(client_->Push(other, tensor::Share(delta)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
    EXPECT_EQ(client_->Push(Header(++sequence), tensor::Share(delta)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
    EXPECT_EQ(Live(), after) << name;
    // A re-sent sum of lost pushes comes as float32, whatever the job's codec.
    v1::PushHeader resent = Header(++sequence);
    resent.set_resent(true);
    ASSERT_TRUE(client_->Push(resent, tensor::Share({{"small", {1, 1, 1}}})).ok()) << name;
  }
  ASSERT_EQ(set_codec(v1::CODEC_NONE), grpc::StatusCode::OK);
  v1::PushHeader compressed = Header(++sequence);
  compressed.set_codec(v1::CODEC_BF16);
  EXPECT_EQ(client_->Push(compressed, tensor::Share({{"small", {1, 1, 1}}})).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a job without compression takes none";
}

TEST_F(StoreServiceTest, TruncatedAndMalformedStreamsAreRejected) {
  const tensor::TensorMap before = Live();
  v1::PushMessage header;
  *header.mutable_header() = Header(1);
  tensor::ToProto({"big", {3'000'000}}, header.mutable_header()->add_tensors());
  std::vector<v1::PushMessage> stream = {header};
  tensor::ForEachChunk("big", std::vector<float>(3'000'000, 1.0f), tensor::kDefaultChunkBytes,
                       [&](const v1::TensorChunk& c) {
                         v1::PushMessage m;
                         *m.mutable_chunk() = c;
                         stream.push_back(m);
                       });
  std::vector<v1::PushMessage> truncated(stream.begin(), stream.end() - 1);
  EXPECT_EQ(RawPush(truncated), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(RawPush({stream[1]}), grpc::StatusCode::INVALID_ARGUMENT) << "chunk before header";
  EXPECT_EQ(RawPush({}), grpc::StatusCode::INVALID_ARGUMENT) << "empty stream";
  EXPECT_EQ(Live(), before);
  EXPECT_EQ(RawPush(stream), grpc::StatusCode::OK);
}

TEST_F(StoreServiceTest, RoundSnapshotsAreIdenticalForEveryPuller) {
  v1::PushHeader h = Header(1);
  h.set_apply_mode(v1::APPLY_MODE_ROUND);
  h.set_clock(1);
  ASSERT_TRUE(client_->Push(h, tensor::Share({{"small", {3, 3, 3}}})).ok());
  // Round 1 is not closed yet: a pull of it waits for the close (pipelined grants).
  absl::StatusOr<client::PulledModel> early;
  std::thread puller([&] { early = client_->Pull(1); });
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (store_.metrics.pulls_parked.Value() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(store_.metrics.pulls_parked.Value(), 1);
  EXPECT_EQ(store_.waiters.parked(), 1u);
  grpc::ClientContext ctx;
  v1::CloseRoundRequest close;
  close.set_round(1);
  close.set_aggregation(v1::AGGREGATION_MEAN);
  v1::PushCut* cut = close.add_cuts();
  cut->set_trainer_id(h.trainer_id());
  cut->set_incarnation(h.incarnation());
  cut->set_clock(1);
  v1::CloseRoundReply closed;
  EXPECT_TRUE(stub_->CloseRound(&ctx, close, &closed).ok());
  puller.join();
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_EQ(early->checksums, std::vector<uint32_t>{closed.checksum()});
  EXPECT_EQ(early->tensors["small"], (std::vector<float>{4, 5, 6}));
  absl::StatusOr<client::PulledModel> a = client_->Pull(1);
  client::StoreClient other({address_}, rpc::Credentials::Insecure(), absl::Seconds(10),
                            tensor::kMinChunkBytes);
  absl::StatusOr<client::PulledModel> b = other.Pull(1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->checksums, b->checksums);
  EXPECT_EQ(a->checksums[0], closed.checksum());
  EXPECT_EQ(a->tensors, b->tensors);
  EXPECT_EQ(a->tensors["small"], (std::vector<float>{4, 5, 6}));
}

// A shard that holds a pull for its round only so long, as a registry of bounded size.
class WaitingPullTest : public ::testing::Test {
 protected:
  void Start(absl::Duration pull_wait) {
    store_ = std::make_unique<LocalStore>(pull_wait);
    ASSERT_TRUE(store_->Start().ok());
    store_->table.SetMembers({{kTrainer, 1}});
    client::StoreClient trainer({store_->address()}, rpc::Credentials::Insecure(),
                                absl::Seconds(10));
    v1::PushHeader h;
    h.set_trainer_id(kTrainer);
    h.set_incarnation(1);
    ASSERT_TRUE(trainer.Initialize(h, {{"w", {1, 2}}}).ok());
    stub_ = v1::ParameterStore::NewStub(
        rpc::MakeChannel(store_->address(), rpc::Credentials::Insecure(), rpc::Role::kStore));
  }
  void TearDown() override {
    if (store_) store_->Stop();
  }
  // A raw pull of `round`, read to its end.
  grpc::Status PullRound(int64_t round, grpc::ClientContext* ctx) {
    v1::PullRequest request;
    request.set_round(round);
    auto reader = stub_->Pull(ctx, request);
    v1::PullMessage message;
    while (reader->Read(&message)) {
    }
    return reader->Finish();
  }
  // Pulls `round` on a thread of its own (its status into `status`), and waits until the shard
  // holds it.
  std::thread PullWhileItWaits(int64_t round, grpc::ClientContext* ctx, grpc::Status* status) {
    std::thread puller([this, round, ctx, status] { *status = PullRound(round, ctx); });
    EXPECT_TRUE(Parked(1));
    return puller;
  }
  // Waits (with a deadline) until `parked` pulls wait on the shard.
  bool Parked(size_t parked) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (store_->waiters.parked() != parked && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return store_->waiters.parked() == parked;
  }

  std::unique_ptr<LocalStore> store_;
  std::unique_ptr<v1::ParameterStore::Stub> stub_;
};

TEST_F(WaitingPullTest, ARoundThatDoesNotCloseInTimeIsRetriedNotRefused) {
  Start(absl::Milliseconds(100));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(20));
  const grpc::Status status = PullRound(1, ctx.get());
  // UNAVAILABLE: the trainer's StoreClient retries it with backoff, as a shard that is down.
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_NE(status.error_message().find("round 1"), std::string::npos) << status.error_message();
  EXPECT_EQ(store_->metrics.pulls_parked.Value(), 1);
  EXPECT_EQ(store_->waiters.parked(), 0u);
}

// A shard that catches up with the job's round (a membership naming a later round) serves the
// pulls waiting for it.
TEST_F(WaitingPullTest, ACatchUpServesThePullsWaiting) {
  Start(absl::Minutes(1));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(20));
  grpc::Status status;
  std::thread puller = PullWhileItWaits(2, ctx.get(), &status);
  v1::Membership m = OneTrainer(v1::APPLY_MODE_ROUND);
  m.set_round(2);
  grpc::ClientContext membership_ctx;
  v1::SetMembershipReply reply;
  EXPECT_TRUE(stub_->SetMembership(&membership_ctx, m, &reply).ok());
  EXPECT_EQ(reply.rounds_skipped(), 2);
  puller.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(WaitingPullTest, ARoundFarAheadIsRefusedAtOnce) {
  Start(absl::Minutes(1));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(20));
  const grpc::Status status = PullRound(1 + store_->waiters.options().max_rounds_ahead, ctx.get());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_EQ(store_->metrics.pulls_parked.Value(), 0);
}

TEST_F(WaitingPullTest, WithoutParkingARoundNotClosedIsRefusedAtOnce) {
  Start(absl::ZeroDuration());
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(20));
  EXPECT_EQ(PullRound(1, ctx.get()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(WaitingPullTest, ACancelledPullStopsWaiting) {
  Start(absl::Minutes(1));
  grpc::ClientContext ctx;
  grpc::Status status;
  std::thread puller = PullWhileItWaits(1, &ctx, &status);
  ctx.TryCancel();
  puller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Parked(0)) << "the cancelled pull still waits";
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (store_->metrics.streams_open.Value() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(store_->metrics.streams_open.Value(), 0);
}

TEST_F(WaitingPullTest, AStoppingShardEndsItsWaitingPulls) {
  Start(absl::Minutes(1));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(20));
  grpc::Status status;
  std::thread puller = PullWhileItWaits(1, ctx.get(), &status);
  store_->Stop();  // returns: the waiting pull does not hold the server's shutdown
  puller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

// A shard restarts on its port from its state: the trainer's push, refused while the shard waits
// for the coordinator (UNAVAILABLE), is retried with backoff and goes through once the membership
// arrives, applied once.
TEST_F(StoreServiceTest, APushRidesOutAShardRestart) {
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  store::DurableState state = store_.table.Durable();

  store::ParameterTable& restarted = Restart().table;
  ASSERT_TRUE(restarted.Restore(state).ok());
  ASSERT_NO_FATAL_FAILURE(Serve());

  absl::Status pushed = absl::UnknownError("not yet");
  std::thread trainer([&] {
    pushed = client_->Push(Header(2), tensor::Share({{"small", {1, 1, 1}}})).status();
  });
  auto& unavailable = restarted_->metrics.rejected.Add({{"code", "unavailable"}});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (unavailable.Value() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_GT(unavailable.Value(), 0) << "the push never reached the restarted shard";
  restarted.SetMembers({{kTrainer, 1}});
  trainer.join();
  EXPECT_TRUE(pushed.ok()) << pushed;
  EXPECT_EQ(Live()["small"], (std::vector<float>{3, 4, 5}));
  // The retried sequence 1 stays applied once.
  EXPECT_TRUE(client_->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{3, 4, 5}));
}

// Exactly once across a restart: pushes the shard applied after its last checkpoint are lost
// with it. The client learns of the restart from its next push (ABORTED: the push expected the
// old incarnation, and nothing is applied), re-sends what the checkpoint does not hold, weighted
// as pushed, then the push itself.
TEST_F(StoreServiceTest, PushesARestartLostAreResentOnce) {
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  store::DurableState state = store_.table.Durable();  // the checkpoint holds push 1...
  store_.table.Saved(state.epoch);
  v1::PushHeader half = Header(2);
  half.set_weight(0.5f);
  ASSERT_TRUE(
      client_->Push(half, tensor::Share({{"small", {2, 2, 2}}})).ok());  // ...not pushes 2 and 3
  ASSERT_TRUE(client_->Push(Header(3), tensor::Share({{"small", {1, 1, 1}}})).ok());

  store::ParameterTable& restarted = Restart().table;
  ASSERT_TRUE(restarted.Restore(state).ok());
  restarted.SetMembers({{kTrainer, 1}});
  // The new process checkpoints a few times before this trainer pushes again (it was waiting at
  // its bound): what it lost is still re-sent.
  for (int i = 0; i < 3; ++i) restarted.Saved(restarted.Durable().epoch);
  ASSERT_NO_FATAL_FAILURE(Serve());

  // A push that expects the old incarnation is refused whole.
  v1::PushMessage stale;
  *stale.mutable_header() = Header(9);
  stale.mutable_header()->set_shard_incarnation(1);
  tensor::ToProto({"small", {3}}, stale.mutable_header()->add_tensors());
  std::vector<v1::PushMessage> messages{stale};
  tensor::ForEachChunk("small", std::vector<float>{5, 5, 5}, tensor::kDefaultChunkBytes,
                       [&](v1::TensorChunk& chunk) {
                         v1::PushMessage m;
                         m.mutable_chunk()->Swap(&chunk);
                         messages.push_back(m);
                       });
  EXPECT_EQ(RawPush(messages), grpc::StatusCode::ABORTED);
  EXPECT_EQ(Live()["small"], (std::vector<float>{2, 3, 4}));  // push 1 only

  ASSERT_TRUE(client_->Push(Header(4), tensor::Share({{"small", {1, 1, 1}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{5, 6, 7}));  // 1..4, each once
  ASSERT_TRUE(client_->Push(Header(5), tensor::Share({{"small", {1, 1, 1}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{6, 7, 8}));  // nothing re-sent twice
  // Sequence 3 went in with the re-sent sum: a retry of it is a duplicate.
  ASSERT_TRUE(client_->Push(Header(3), tensor::Share({{"small", {1, 1, 1}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{6, 7, 8}));
}

// A trainer that leaves without pushing to a restarted shard again re-sends what it lost before
// leaving (StoreLink::ResendWhatRestartsLost): asked once, the shard takes each lost push once;
// asked again, or asked of a shard that kept running, nothing is sent twice.
TEST_F(StoreServiceTest, PushesARestartLostAreResentBeforeLeaving) {
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  store::DurableState state = store_.table.Durable();  // the checkpoint holds push 1...
  store_.table.Saved(state.epoch);
  ASSERT_TRUE(client_->Push(Header(2), tensor::Share({{"small", {2, 2, 2}}})).ok());  // ...not 2
  // Nothing restarted yet: nothing to re-send.
  ASSERT_TRUE(client_->ResendWhatRestartsLost(Header(0)).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{4, 5, 6}));

  store::ParameterTable& restarted = Restart().table;
  ASSERT_TRUE(restarted.Restore(state).ok());
  restarted.SetMembers({{kTrainer, 1}});
  ASSERT_NO_FATAL_FAILURE(Serve());
  EXPECT_EQ(Live()["small"], (std::vector<float>{2, 3, 4}));  // push 1 only

  EXPECT_EQ(trainer_metrics_.pushes_resent.Value(), 0);
  ASSERT_TRUE(client_->ResendWhatRestartsLost(Header(0)).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{4, 5, 6}));  // 1 and 2, each once
  EXPECT_EQ(trainer_metrics_.pushes_resent.Value(), 1);  // push 2: push 1 was in the checkpoint
  ASSERT_TRUE(client_->ResendWhatRestartsLost(Header(0)).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(trainer_metrics_.pushes_resent.Value(), 1);
  // A retry of push 2 is a duplicate: it went in with the re-sent sum.
  ASSERT_TRUE(client_->Push(Header(2), tensor::Share({{"small", {2, 2, 2}}})).ok());
  EXPECT_EQ(Live()["small"], (std::vector<float>{4, 5, 6}));
}

// A shard whose checkpoints are never written: each cut starts an epoch whose sum the trainer
// keeps, at most 8 of them; past that the oldest is no longer protected, and counted.
TEST_F(StoreServiceTest, PushesNoLongerKeptToResendAreCounted) {
  for (uint64_t sequence = 1; sequence <= 10; ++sequence) {
    ASSERT_TRUE(client_->Push(Header(sequence), tensor::Share({{"small", {1, 1, 1}}})).ok());
    (void)store_.table.Durable();  // a cut, never saved
  }
  EXPECT_EQ(trainer_metrics_.pushes_unprotected.Value(), 2);  // the sums of pushes 1 and 2
  EXPECT_EQ(trainer_metrics_.pushes_resent.Value(), 0);
}

// A shard that cannot be reached as the trainer leaves (stopped with it, or frozen) is given up
// within the client's leave limit, its calls' deadlines included, though a push would wait for it
// for minutes: leaving never hangs on it. (The bounds checked are the limit's, with ample margin;
// without the limit these calls wait 2 minutes, or 30 s for a frozen shard's answer.)
TEST_F(StoreServiceTest, AShardUnreachableAsTheTrainerLeavesIsGivenUpInTime) {
  auto client = [&] {
    return std::make_unique<client::StoreClient>(
        std::vector<std::string>{address_}, rpc::Credentials::Insecure(), absl::Seconds(30),
        tensor::kDefaultChunkBytes, client::LinkLimits{}, /*retry_for=*/absl::Minutes(2),
        /*leave_within=*/absl::Milliseconds(300));
  };
  auto leave = [](client::StoreClient& c) {
    const absl::Time start = absl::Now();
    const absl::Status resent = c.ResendWhatRestartsLost(Header(0));
    EXPECT_TRUE(absl::IsUnavailable(resent)) << resent;
    return absl::Now() - start;
  };
  std::unique_ptr<client::StoreClient> stopped = client();
  std::unique_ptr<client::StoreClient> frozen = client();
  ASSERT_TRUE(stopped->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  ASSERT_TRUE(frozen->Push(Header(2), tensor::Share({{"small", {1, 1, 1}}})).ok());
  rpc::StopServer(*store_.server);
  EXPECT_LT(leave(*stopped), absl::Seconds(10));

  // Frozen: the port takes connections and never answers.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  const int on = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(store_.port));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0) << errno;
  ASSERT_EQ(listen(listener, 16), 0);
  EXPECT_LT(leave(*frozen), absl::Seconds(10));
  close(listener);
}

// A push waiting out a store outage gives up at its next retry once the trainer is stopping
// (StoreClient::set_interrupt), with CANCELLED; a re-send on the way out is not cut short so.
TEST_F(StoreServiceTest, AStoppingTrainerGivesUpAPushWaitingForTheStore) {
  std::atomic<bool> stopping{false};
  client_->set_interrupt([&] { return stopping.load(); });
  ASSERT_TRUE(client_->Push(Header(1), tensor::Share({{"small", {1, 1, 1}}})).ok());
  rpc::StopServer(*store_.server);
  absl::Status pushed;
  std::thread trainer([&] {
    pushed = client_->Push(Header(2), tensor::Share({{"small", {1, 1, 1}}})).status();
  });
  stopping = true;  // the push is retrying (2 minutes) or about to: its next retry gives up
  trainer.join();
  EXPECT_TRUE(client::IsGivenUpForStop(pushed)) << pushed;
}

// Round pushes too: the restarted shard lost round 2 (closed after its checkpoint) and the pending
// push of clock 3; it caught up with the job's round by skipping. The trainer re-sends both as one
// sum of their weight, late for their own rounds, and the next round takes it with the new push:
// each of the four pushes is in the model once.
TEST_F(StoreServiceTest, RoundPushesARestartLostGoIntoTheNextRound) {
  auto round_push = [](uint64_t clock) {
    v1::PushHeader h = Header(clock);
    h.set_apply_mode(v1::APPLY_MODE_ROUND);
    h.set_clock(static_cast<int64_t>(clock));
    return h;
  };
  auto close = [](store::ParameterTable& table, int64_t round, int64_t cut) {
    return table.CloseRound({round, {{{kTrainer, 1}, cut}}, v1::AGGREGATION_SCALED, 1.0});
  };
  const tensor::TensorMap one = {{"small", {1, 1, 1}}};
  ASSERT_TRUE(client_->Push(round_push(1), tensor::Share(one)).ok());
  ASSERT_TRUE(close(store_.table, 1, 1).ok());
  store::DurableState state = store_.table.Durable();  // round 1, nothing pending
  store_.table.Saved(state.epoch);
  ASSERT_TRUE(client_->Push(round_push(2), tensor::Share(one)).ok());
  ASSERT_TRUE(close(store_.table, 2, 2).ok());
  ASSERT_TRUE(
      client_->Push(round_push(3), tensor::Share(one)).ok());  // pending when the shard dies

  store::ParameterTable& restarted = Restart().table;
  ASSERT_TRUE(restarted.Restore(state).ok());
  EXPECT_EQ(restarted.SetMembers({{kTrainer, 1}}, 2).rounds_skipped, 1);
  ASSERT_TRUE(close(restarted, 3, 3).ok());  // the job's round 3: clock 3 is lost here
  ASSERT_NO_FATAL_FAILURE(Serve());
  EXPECT_EQ(Live()["small"], (std::vector<float>{2, 3, 4}));  // push 1 only

  ASSERT_TRUE(client_->Push(round_push(4), tensor::Share(one)).ok());
  const absl::StatusOr<store::CloseResult> closed = close(restarted, 4, 4);
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_EQ(closed->pushes, 2u);                              // the re-sent sum and push 4
  EXPECT_EQ(Live()["small"], (std::vector<float>{5, 6, 7}));  // 1..4, each once
}

// Two shards that keep different numbers of round snapshots, as after a slow group fell behind:
// a pull of a round one of them dropped gets the newest round, the same on both shards, and waits
// for a shard that has not closed that round yet.
class PullWindowTest : public ::testing::Test {
 protected:
  struct Shard {
    explicit Shard(int kept, uint32_t index)
        : table(kept),
          service(table, metrics, index, 2, 1,
                  rpc::Authorizer(rpc::Credentials::Insecure(), nullptr)) {}
    prometheus::Registry registry;
    store::StoreMetrics metrics{registry};
    store::ParameterTable table;
    store::StoreService service;
    std::unique_ptr<grpc::Server> server;
    std::string address;
  };

  void Start(int kept_a, int kept_b) {
    shards_[0] = std::make_unique<Shard>(kept_a, 0);
    shards_[1] = std::make_unique<Shard>(kept_b, 1);
    std::vector<std::string> addresses;
    for (auto& shard : shards_) {
      int port = 0;
      ASSERT_TRUE(rpc::StartServer("127.0.0.1:0", {&shard->service}, rpc::Credentials::Insecure(),
                                   &shard->server, &port)
                      .ok());
      shard->address = "127.0.0.1:" + std::to_string(port);
      addresses.push_back(shard->address);
      shard->table.SetMembers({{kTrainer, 1}});
    }
    client_ = std::make_unique<client::StoreClient>(addresses, rpc::Credentials::Insecure(),
                                                    absl::Seconds(10));
    // Names on both shards.
    for (int i = 0; model_.size() < 4; ++i) {
      const std::string name = "t" + std::to_string(i);
      const uint32_t shard = tensor::ShardOf(name, 2);
      if (std::count_if(model_.begin(), model_.end(),
                        [&](const auto& e) { return tensor::ShardOf(e.first, 2) == shard; }) < 2) {
        model_[name] = {static_cast<float>(i), 1};
      }
    }
    v1::PushHeader h;
    h.set_trainer_id(kTrainer);
    h.set_incarnation(1);
    ASSERT_TRUE(client_->Initialize(h, model_).ok());
  }
  void TearDown() override {
    for (auto& shard : shards_) {
      if (shard && shard->server) rpc::StopServer(*shard->server);
    }
  }
  // Closes rounds up to `round` on one shard.
  void CloseUpTo(int shard, int64_t round) {
    store::ParameterTable& table = shards_[shard]->table;
    for (int64_t r = table.last_closed_round() + 1; r <= round; ++r) {
      ASSERT_TRUE(table.CloseRound({r, {}, v1::AGGREGATION_MEAN, 1.0}).ok());
    }
  }
  uint32_t Checksum(int shard, int64_t round) {
    return (*shards_[shard]->table.Snapshot(round))->checksum;
  }

  std::unique_ptr<Shard> shards_[2];
  std::unique_ptr<client::StoreClient> client_;
  tensor::TensorMap model_;
};

TEST_F(PullWindowTest, ADroppedRoundIsReplacedByTheNewestOnEveryShard) {
  Start(/*kept_a=*/8, /*kept_b=*/2);
  CloseUpTo(0, 5);
  CloseUpTo(1, 5);
  ASSERT_EQ(shards_[1]->table.Snapshot(2).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<client::PulledModel> pulled = client_->Pull(2);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(pulled->round, 5);
  EXPECT_EQ(pulled->checksums, (std::vector<uint32_t>{Checksum(0, 5), Checksum(1, 5)}));
  EXPECT_EQ(pulled->tensors.size(), model_.size());
  // A round every shard keeps is pulled as asked.
  EXPECT_EQ(client_->Pull(4)->round, 4);
}

TEST_F(PullWindowTest, TheReplacementWaitsForAShardStillClosingIt) {
  Start(/*kept_a=*/2, /*kept_b=*/8);
  CloseUpTo(0, 6);
  CloseUpTo(1, 5);  // shard 1 has not closed round 6 yet
  absl::StatusOr<client::PulledModel> pulled;
  std::thread trainer([&] { pulled = client_->Pull(3); });
  // Shard 0 serves round 6 in place of 3; shard 1 refuses 6 until it closes it.
  auto& refused = shards_[1]->metrics.rejected.Add({{"code", "failed_precondition"}});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (refused.Value() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_GT(refused.Value(), 0) << "the pull never asked shard 1 for round 6";
  CloseUpTo(1, 6);
  trainer.join();
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(pulled->round, 6);
  EXPECT_EQ(pulled->checksums, (std::vector<uint32_t>{Checksum(0, 6), Checksum(1, 6)}));
}

// With several shards each shard's call runs on a thread of its own, and only the calling thread
// asks the interrupt (a language binding checks its signals there): the calls still give up.
TEST_F(PullWindowTest, AStoppingTrainerGivesUpCallsToSeveralShards) {
  Start(2, 2);
  std::atomic<bool> stopping{false};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> asked_elsewhere{false};
  client_->set_interrupt([&] {
    if (std::this_thread::get_id() != caller) asked_elsewhere = true;
    return stopping.load();
  });
  for (auto& shard : shards_) rpc::StopServer(*shard->server);
  std::thread stopper([&] { stopping = true; });
  const absl::Status pulled = client_->Pull(-1).status();
  stopper.join();
  EXPECT_TRUE(client::IsGivenUpForStop(pulled)) << pulled;
  EXPECT_FALSE(asked_elsewhere);
}

}  // namespace
}  // namespace syncopate
