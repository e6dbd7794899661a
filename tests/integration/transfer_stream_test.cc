// The Transfer stream (client/transfer_stream.h against store/transfer_reactor.h): one stream
// carries a trainer's pushes and pulls; a refusal, a deadline or the store's restart ends it, and
// the next transfer opens another.
#include "client/transfer_stream.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "base/clock.h"
#include "base/status_macros.h"
#include "client/chunk_writer.h"
#include "client/pull_decoder.h"
#include "client/store_client.h"
#include "grpcpp/generic/async_generic_service.h"
#include "gtest/gtest.h"
#include "local_store.h"
#include "rpc/chunk_frames.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"

namespace syncopate {
namespace {

constexpr uint64_t kStreamTrainer = 5;
constexpr char kStoreTransfer[] = "/syncopate.v1.ParameterStore/Transfer";

v1::PushHeader StreamHeader(uint64_t sequence) {
  v1::PushHeader h;
  h.set_trainer_id(kStreamTrainer);
  h.set_incarnation(1);
  h.set_sequence(sequence);
  h.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  h.set_weight(1);
  return h;
}

// Serves `store` and gives it the model w = `values` (through a call, as a trainer initializes).
void ServeWithModel(LocalStore& store, std::vector<float> values) {
  store.table.SetMembers({{kStreamTrainer, 1}});
  client::StoreClient client({store.address()}, rpc::Credentials::Insecure(), absl::Seconds(10));
  ASSERT_TRUE(client.Initialize(StreamHeader(0), {{"w", std::move(values)}}).ok());
}

class TransferStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.Start().ok());
    ServeWithModel(store_, {1, 2, 3});
    stream_ = std::make_unique<client::TransferStream>(
        rpc::MakeChannel(store_.address(), rpc::Credentials::Insecure(), rpc::Role::kStore),
        kStoreTransfer, "store " + store_.address());
  }
  void TearDown() override {
    stream_.reset();
    store_.Stop();
  }

  // Pushes `values` as tensor `name` with `sequence` on the stream.
  absl::Status Push(uint64_t sequence, std::vector<float> values, const std::string& name = "w",
                    v1::PushReply* reply = nullptr) {
    v1::PushMessage first;
    *first.mutable_header() = StreamHeader(sequence);
    const tensor::SharedTensorMap delta = tensor::Share({{name, std::move(values)}});
    const client::TensorEntries entries = client::AllEntries(*delta);
    client::AddSpecs(entries, first.mutable_header());
    v1::PushReply ignored;
    return client::PushOnStream(
        *stream_, rpc::EncodeMessage(first),
        [&](client::TransferStream::Writer& writer) {
          return client::WriteChunks(writer, delta, entries, tensor::kDefaultChunkBytes, nullptr);
        },
        absl::Seconds(10), reply != nullptr ? reply : &ignored);
  }
  // Pulls the live model (round < 0) or `round` on the stream.
  absl::StatusOr<tensor::TensorMap> Pull(int64_t round = -1,
                                         absl::Duration timeout = absl::Seconds(10)) {
    v1::PullRequest request;
    if (round < 0) {
      request.set_live(true);
    } else {
      request.set_round(round);
    }
    client::PullDecoder decoder;
    RETURN_IF_ERROR(
        stream_->Pull(request, timeout, [&](const grpc::ByteBuffer& m) { return decoder.Add(m); }));
    client::PulledModel model;
    RETURN_IF_ERROR(decoder.Finish(&model));
    return model.tensors;
  }

  LocalStore store_;
  std::unique_ptr<client::TransferStream> stream_;
};

TEST_F(TransferStreamTest, OneStreamCarriesPushesAndPulls) {
  EXPECT_FALSE(stream_->open());
  ASSERT_TRUE(Push(1, {1, 1, 1}).ok());
  EXPECT_TRUE(stream_->open());
  v1::PushReply reply;
  ASSERT_TRUE(Push(2, {1, 1, 1}, "w", &reply).ok());
  EXPECT_FALSE(reply.duplicate());
  ASSERT_TRUE(Push(2, {1, 1, 1}, "w", &reply).ok());  // a retry: taken once
  EXPECT_TRUE(reply.duplicate());
  absl::StatusOr<tensor::TensorMap> model = Pull();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->at("w"), (std::vector<float>{3, 4, 5}));
  ASSERT_TRUE(Pull(0).ok());  // the initial model's round
  EXPECT_TRUE(stream_->open());
  EXPECT_EQ(store_.metrics.pushes_applied.Value(), 2);
}

TEST_F(TransferStreamTest, ARefusalEndsTheStreamAndTheNextTransferOpensAnother) {
  ASSERT_TRUE(Push(1, {1, 1, 1}).ok());
  const absl::Status refused = Push(2, {9, 9, 9}, "unknown");
  EXPECT_TRUE(absl::IsNotFound(refused)) << refused;
  EXPECT_NE(refused.message().find("store 127.0.0.1:"), std::string::npos) << refused;
  EXPECT_FALSE(stream_->open());
  absl::StatusOr<tensor::TensorMap> model = Pull();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->at("w"), (std::vector<float>{2, 3, 4}));  // the refused push changed nothing
  EXPECT_TRUE(stream_->open());
}

TEST_F(TransferStreamTest, ARoundNotClosedIsAnsweredBeforeThePullsDeadline) {
  // Round 1 is not closed: its pull waits at the store, and is answered a little before this
  // side would give up, as a Pull call is, so that the trainer retries it.
  const absl::Time start = absl::Now();
  const absl::StatusOr<tensor::TensorMap> early = Pull(1, absl::Seconds(1));
  EXPECT_TRUE(absl::IsUnavailable(early.status())) << early.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_TRUE(Pull().ok());
}

// A gRPC server that takes every call and never answers it: no call is ever asked for.
struct SilentServer {
  SilentServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterAsyncGenericService(&generic);
    queue = builder.AddCompletionQueue();
    server = builder.BuildAndStart();
  }
  ~SilentServer() {
    rpc::StopServer(*server);
    queue->Shutdown();
    void* tag;
    bool ok;
    while (queue->Next(&tag, &ok)) {
    }
  }
  grpc::AsyncGenericService generic;
  std::unique_ptr<grpc::ServerCompletionQueue> queue;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

TEST(TransferStreamDeadlineTest, ATransferPastItsDeadlineIsCancelled) {
  SilentServer silent;
  ASSERT_NE(silent.port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(silent.port);
  client::TransferStream stream(
      rpc::MakeChannel(address, rpc::Credentials::Insecure(), rpc::Role::kStore), kStoreTransfer,
      address);
  v1::PullRequest request;
  request.set_live(true);
  const absl::Time start = absl::Now();
  const absl::Status late = stream.Pull(request, absl::Milliseconds(300),
                                        [](const grpc::ByteBuffer&) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsDeadlineExceeded(late)) << late;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_FALSE(stream.open());
}

TEST_F(TransferStreamTest, AStreamEndedWhileIdleIsReplacedAtOnce) {
  ASSERT_TRUE(Push(1, {1, 1, 1}).ok());
  // The store restarts between two transfers, on its port, with another model.
  rpc::StopServer(*store_.server);
  LocalStore restarted;
  int port = 0;
  ASSERT_TRUE(rpc::StartServer(store_.address(), {&restarted.service}, rpc::Credentials::Insecure(),
                               &restarted.server, &port)
                  .ok());
  restarted.port = port;
  ServeWithModel(restarted, {7, 8, 9});
  // The next transfer finds its stream gone before it sent anything, and goes on a new one.
  absl::StatusOr<tensor::TensorMap> model = Pull();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->at("w"), (std::vector<float>{7, 8, 9}));
  stream_.reset();
  restarted.Stop();
}

// The store's watchdog cancels a stream quiet between transfers (a trainer held at a barrier);
// the trainer's next transfer goes on a new stream without an error.
// A store served with a watchdog quiet for `idle` cancels (zero: never), holding w = {1, 2, 3},
// and a trainer's stream to it.
struct WatchedStore {
  explicit WatchedStore(absl::Duration idle) : watchdog(idle, clock) {
    EXPECT_TRUE(store.Start().ok());
    ServeWithModel(store, {1, 2, 3});
    stream = std::make_unique<client::TransferStream>(
        rpc::MakeChannel(store.address(), rpc::Credentials::Insecure(), rpc::Role::kStore),
        kStoreTransfer, store.address());
  }
  ~WatchedStore() {
    stream.reset();
    store.Stop();
  }
  // A live pull on the stream, within `timeout`.
  absl::Status PullLive(absl::Duration timeout = absl::Seconds(10)) {
    v1::PullRequest live;
    live.set_live(true);
    return stream->Pull(live, timeout, [](const grpc::ByteBuffer&) { return absl::OkStatus(); });
  }

  base::FakeClock clock;
  rpc::StreamWatchdog watchdog;
  LocalStore store{absl::Seconds(5), &watchdog};
  std::unique_ptr<client::TransferStream> stream;
};

TEST(TransferStreamWatchdogTest, AQuietStreamIsCancelledAndTheNextTransferOpensAnother) {
  WatchedStore s(absl::Seconds(60));
  ASSERT_TRUE(s.PullLive().ok());
  EXPECT_EQ(SweepUntilCancelled(s.clock, s.watchdog), 1);
  const absl::Status again = s.PullLive();
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_TRUE(s.stream->open());
}

// A stopping store (its watchdog drains) ends a trainer's stream idle between two transfers at
// once, so its graceful shutdown does not wait for it; the trainer's next transfer finds the
// store gone and is UNAVAILABLE, which it retries.
TEST(TransferStreamDrainTest, AStoppingStoreEndsAnIdleStreamAtOnce) {
  WatchedStore s(absl::ZeroDuration());  // never cancels for quiet
  ASSERT_TRUE(s.PullLive().ok());
  ASSERT_TRUE(s.stream->open());
  // 1, or 0 when the pull's reply reached the trainer before the store's reactor said the stream
  // idle again: then it is cancelled as it says so. Either way the shutdown below must not wait.
  EXPECT_LE(s.watchdog.Drain(), 1);
  // Without the drain, the idle stream would hold the shutdown until its deadline.
  const absl::Time grace = absl::Now() + absl::Seconds(60);
  s.store.server->Shutdown(absl::ToChronoTime(grace));
  EXPECT_LT(absl::Now(), grace);
  const absl::Status after = s.PullLive(absl::Seconds(2));
  EXPECT_TRUE(absl::IsUnavailable(after)) << after;
}

}  // namespace
}  // namespace syncopate
