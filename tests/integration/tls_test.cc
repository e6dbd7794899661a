// Mutual TLS and per-role authorization over real gRPC on loopback (docs/security.md): certificates
// from throw-away CAs (cli/certificates.h, Debian's openssl), the store, coordinator and peer
// services with enforcing authorizers. Every refusal leaves the model as it was.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "base/files.h"
#include "cli/certificates.h"
#include "client/peer_exchange.h"
#include "client/session_client.h"
#include "client/store_client.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/session_service.h"
#include "coordinator/store_control.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "rpc/authorizer.h"
#include "rpc/credentials.h"
#include "rpc/grpc_util.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"
#include "store/store_service.h"
#include "sync/policy_factory.h"

namespace syncopate {
namespace {

using rpc::Credentials;
using rpc::Role;

constexpr uint64_t kAlice = 1;
constexpr uint64_t kBob = 2;

// One CA per test binary run, and a second one nobody trusts; each identity's directory.
class Certificates {
 public:
  static const Certificates& Get() {
    static const Certificates* certificates = new Certificates();
    return *certificates;
  }
  Credentials Of(const std::string& who) const {
    absl::StatusOr<Credentials> credentials = Credentials::FromDirectory(root_ + "/" + who);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : Credentials::Insecure();
  }
  const std::string& root() const { return root_; }

 private:
  Certificates() {
    char pattern[] = "/tmp/syncopate-tls-test-XXXXXX";
    root_ = mkdtemp(pattern);
    auto ca = cli::CertificateAuthority::Create(root_ + "/ca", rpc::kDefaultTrustDomain,
                                                absl::Hours(48), /*replace=*/false);
    auto other = cli::CertificateAuthority::Create(root_ + "/other-ca", rpc::kDefaultTrustDomain,
                                                   absl::Hours(48), /*replace=*/false);
    auto elsewhere = cli::CertificateAuthority::Open(root_ + "/ca", "other.job");
    if (!ca.ok() || !other.ok() || !elsewhere.ok()) {
      ADD_FAILURE() << ca.status() << other.status() << elsewhere.status();
      return;
    }
    const std::map<std::string, rpc::Identity> identities = {
        {"store", {Role::kStore, "store-0"}},
        {"coordinator", {Role::kCoordinator, "coordinator-0"}},
        {"alice", {Role::kTrainer, "alice"}},
        {"bob", {Role::kTrainer, "bob"}},
        {"pool", {Role::kTrainer, ""}},
        {"operator", {Role::kOperator, "ops"}}};
    for (const auto& [who, identity] : identities) {
      EXPECT_TRUE(ca->Issue(identity, root_ + "/" + who).ok()) << who;
    }
    // Alice's name, signed by a CA the job does not trust; and by the job's CA, of another job.
    EXPECT_TRUE(other->Issue({Role::kTrainer, "alice"}, root_ + "/forged-alice").ok());
    EXPECT_TRUE(elsewhere->Issue({Role::kTrainer, "alice"}, root_ + "/other-job-alice").ok());
    // The forged certificate and key beside the job's own CA: the client trusts the store, so it
    // is the store that must refuse it.
    const std::string trusting = root_ + "/forged-alice-trusting-the-job";
    std::filesystem::create_directories(trusting);
    for (const char* file : {rpc::kCertFile, rpc::kKeyFile}) {
      std::filesystem::copy_file(root_ + "/forged-alice/" + file, trusting + "/" + file);
    }
    std::filesystem::copy_file(root_ + "/ca/ca.crt", trusting + "/ca.crt");
  }
  std::string root_;
};

// A store shard serving mutual TLS with the store's certificate, refusing by the caller's.
struct TlsStore {
  // On 127.0.0.2, which the certificates do not name (they name 127.0.0.1 and localhost): clients
  // check the server's role, not its address.
  TlsStore() {
    int bound = 0;
    EXPECT_TRUE(rpc::StartServer("127.0.0.2:0", {&service}, Certificates::Get().Of("store"),
                                 &server, &bound)
                    .ok());
    address = absl::StrCat("127.0.0.2:", bound);
  }
  ~TlsStore() { rpc::StopServer(*server); }

  prometheus::Registry registry;
  store::StoreMetrics metrics{registry};
  store::ParameterTable table;
  store::StoreService service{table,
                              metrics,
                              /*shard=*/0,
                              /*shard_count=*/1,
                              /*incarnation=*/1,
                              rpc::Authorizer(Certificates::Get().Of("store"), nullptr)};
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

v1::PushHeader Header(uint64_t trainer, uint64_t sequence) {
  v1::PushHeader header;
  header.set_trainer_id(trainer);
  header.set_incarnation(1);
  header.set_sequence(sequence);
  header.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  header.set_weight(1);
  header.set_clock(static_cast<int64_t>(sequence));
  return header;
}

class StoreTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The coordinator names the members; alice and bob are trainers 1 and 2.
    v1::Membership membership;
    for (const auto& [id, name] : {std::pair{kAlice, "alice"}, std::pair{kBob, "bob"}}) {
      v1::Member* member = membership.add_members();
      member->set_trainer_id(id);
      member->set_incarnation(1);
      member->set_name(name);
    }
    membership.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
    membership.set_immediate_weight(1);
    ASSERT_TRUE(SetMembership("coordinator", membership).ok());
    ASSERT_TRUE(Client("alice")->Initialize(Header(kAlice, 0), {{"w", {1, 2, 3}}}).ok());
  }

  absl::Status SetMembership(const std::string& who, const v1::Membership& membership) {
    auto stub = v1::ParameterStore::NewStub(
        rpc::MakeChannel(store_.address, Certificates::Get().Of(who), Role::kStore));
    auto ctx = rpc::ContextWithTimeout(absl::Seconds(5));
    v1::SetMembershipReply reply;
    return rpc::FromGrpcStatus(stub->SetMembership(ctx.get(), membership, &reply));
  }
  // A store client holding `who`'s certificate (or none), giving up on an unreachable store soon.
  std::unique_ptr<client::StoreClient> Client(const std::string& who) {
    const Credentials credentials =
        who.empty() ? Credentials::Insecure() : Certificates::Get().Of(who);
    return std::make_unique<client::StoreClient>(
        std::vector<std::string>{store_.address}, credentials, absl::Seconds(2),
        tensor::kDefaultChunkBytes, client::LinkLimits{}, /*retry_for=*/absl::Seconds(1));
  }
  // The live model, as the coordinator's certificate pulls it.
  tensor::TensorMap Model() {
    absl::StatusOr<client::PulledModel> pulled = Client("coordinator")->Pull(-1);
    EXPECT_TRUE(pulled.ok()) << pulled.status();
    return pulled.ok() ? pulled->tensors : tensor::TensorMap();
  }
  double Rejected(const std::string& code) {
    for (const auto& family : store_.registry.Collect()) {
      if (family.name != "syncopate_store_requests_rejected_total") continue;
      for (const auto& metric : family.metric) {
        for (const auto& label : metric.label) {
          if (label.value == code) return metric.counter.value;
        }
      }
    }
    return 0;
  }

  TlsStore store_;
};

TEST_F(StoreTlsTest, ATrainerPushesOnlyUnderItsOwnId) {
  // Alice's pushes share one Transfer stream: each is authorized by its own trainer id.
  std::unique_ptr<client::StoreClient> alice = Client("alice");
  ASSERT_TRUE(alice->Push(Header(kAlice, 1), tensor::Share({{"w", {1, 1, 1}}})).ok());
  const tensor::TensorMap before = Model();
  EXPECT_EQ(before.at("w"), (std::vector<float>{2, 3, 4}));

  absl::StatusOr<uint64_t> forged = alice->Push(Header(kBob, 1), tensor::Share({{"w", {9, 9, 9}}}));
  EXPECT_EQ(forged.status().code(), absl::StatusCode::kPermissionDenied) << forged.status();
  EXPECT_NE(forged.status().message().find("trainer alice may not send a push for trainer id 2"),
            std::string::npos)
      << forged.status();
  EXPECT_EQ(Model(), before);
  EXPECT_EQ(Rejected("permission_denied"), 1);
  // The refusal ended her stream; her next push goes on a new one.
  EXPECT_TRUE(alice->Push(Header(kAlice, 2), tensor::Share({{"w", {0, 0, 0}}})).ok());

  // Bob's own certificate, and a trainer pool certificate, may push as bob.
  EXPECT_TRUE(Client("bob")->Push(Header(kBob, 1), tensor::Share({{"w", {1, 1, 1}}})).ok());
  EXPECT_TRUE(Client("pool")->Push(Header(kBob, 2), tensor::Share({{"w", {1, 1, 1}}})).ok());
  EXPECT_EQ(Model().at("w"), (std::vector<float>{4, 5, 6}));
}

TEST_F(StoreTlsTest, OnlyTheCoordinatorSetsMembersAndClosesRounds) {
  const tensor::TensorMap before = Model();
  // A valid membership that would drop alice.
  v1::Membership without_alice;
  v1::Member* bob = without_alice.add_members();
  bob->set_trainer_id(kBob);
  bob->set_incarnation(1);
  bob->set_name("bob");
  without_alice.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  without_alice.set_immediate_weight(1);
  for (const char* who : {"alice", "operator", "store"}) {
    absl::Status status = SetMembership(who, without_alice);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << who << ": " << status;
    EXPECT_NE(status.message().find("only coordinator may call it"), std::string::npos) << status;
  }
  auto stub = v1::ParameterStore::NewStub(
      rpc::MakeChannel(store_.address, Certificates::Get().Of("alice"), Role::kStore));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  v1::CloseRoundRequest close;
  close.set_round(1);
  v1::CloseRoundReply closed;
  EXPECT_EQ(stub->CloseRound(ctx.get(), close, &closed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Membership unchanged: alice still pushes, and the refusals changed nothing.
  EXPECT_EQ(Model(), before);
  EXPECT_TRUE(Client("alice")->Push(Header(kAlice, 1), tensor::Share({{"w", {1, 1, 1}}})).ok());
}

TEST_F(StoreTlsTest, InitializeAndPushesNeedANamedMember) {
  // Alice may not create tensors under bob's id, nor push for an id no membership named (retried:
  // UNAVAILABLE, the membership may be on its way).
  const tensor::TensorMap before = Model();
  absl::Status initialize = Client("alice")->Initialize(Header(kBob, 0), {{"x", {1}}});
  EXPECT_EQ(initialize.code(), absl::StatusCode::kPermissionDenied) << initialize;
  absl::StatusOr<uint64_t> unknown =
      Client("alice")->Push(Header(99, 1), tensor::Share({{"w", {9, 9, 9}}}));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnavailable) << unknown.status();
  EXPECT_NE(unknown.status().message().find("no name in this shard's membership"),
            std::string::npos)
      << unknown.status();
  EXPECT_EQ(Model(), before);
}

// A shard restored from its checkpoint still knows whose id is whose, even when the coordinator
// restarted too and learns the names back from the shards (a `helm upgrade` restarts both).
TEST_F(StoreTlsTest, ARestoredShardKeepsTheNames) {
  TlsStore restarted;
  ASSERT_TRUE(restarted.table.Restore(store_.table.Durable()).ok());
  auto stub = v1::ParameterStore::NewStub(
      rpc::MakeChannel(restarted.address, Certificates::Get().Of("coordinator"), Role::kStore));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  v1::Schema schema;
  ASSERT_TRUE(stub->GetSchema(ctx.get(), v1::GetSchemaRequest(), &schema).ok());
  ASSERT_EQ(schema.members_size(), 2);
  EXPECT_EQ(schema.members(0).name(), "alice");
  EXPECT_EQ(schema.members(1).name(), "bob");
  // The coordinator reconciles the shard with a membership that names no one.
  v1::Membership unnamed;
  for (uint64_t id : {kAlice, kBob}) {
    v1::Member* member = unnamed.add_members();
    member->set_trainer_id(id);
    member->set_incarnation(1);
  }
  unnamed.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  unnamed.set_immediate_weight(1);
  auto set = rpc::ContextWithTimeout(absl::Seconds(5));
  v1::SetMembershipReply reply;
  ASSERT_TRUE(stub->SetMembership(set.get(), unnamed, &reply).ok());
  auto client = [&](const std::string& who) {
    return std::make_unique<client::StoreClient>(std::vector<std::string>{restarted.address},
                                                 Certificates::Get().Of(who), absl::Seconds(2),
                                                 tensor::kDefaultChunkBytes, client::LinkLimits{},
                                                 /*retry_for=*/absl::Seconds(1));
  };
  absl::StatusOr<uint64_t> forged =
      client("alice")->Push(Header(kBob, 1), tensor::Share({{"w", {9, 9, 9}}}));
  EXPECT_EQ(forged.status().code(), absl::StatusCode::kPermissionDenied) << forged.status();
  EXPECT_TRUE(client("bob")->Push(Header(kBob, 1), tensor::Share({{"w", {1, 1, 1}}})).ok());
}

// A name the coordinator never gives (one that would forge a log line) is refused: it would also
// make the shard's checkpoints unreadable.
TEST_F(StoreTlsTest, AMembershipWithABadNameIsRefused) {
  v1::Membership bad;
  v1::Member* member = bad.add_members();
  member->set_trainer_id(kAlice);
  member->set_incarnation(1);
  member->set_name("alice\nforged");
  bad.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  bad.set_immediate_weight(1);
  EXPECT_EQ(SetMembership("coordinator", bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.table.NameOf(kAlice), "alice");
  EXPECT_TRUE(Client("alice")->Push(Header(kAlice, 1), tensor::Share({{"w", {1, 1, 1}}})).ok());
}

TEST_F(StoreTlsTest, NoCertificateOrAnotherCasCertificateGetsNothing) {
  const tensor::TensorMap before = Model();
  // Another job's certificate, signed by the same CA: its own client refuses the store (another
  // trust domain) ...
  absl::StatusOr<uint64_t> other_job =
      Client("other-job-alice")->Push(Header(kAlice, 1), tensor::Share({{"w", {9, 9, 9}}}));
  EXPECT_EQ(other_job.status().code(), absl::StatusCode::kUnavailable) << other_job.status();
  // ... and a client that checks no server gets through the handshake, to be refused by the store.
  grpc::experimental::TlsChannelCredentialsOptions lenient;
  const std::string other = Certificates::Get().root() + "/other-job-alice/";
  lenient.set_certificate_provider(
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          other + rpc::kKeyFile, other + rpc::kCertFile, other + rpc::kCaFile, 1));
  lenient.watch_root_certs();
  lenient.watch_identity_key_cert_pairs();
  lenient.set_check_call_host(false);
  lenient.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  auto lenient_stub = v1::ParameterStore::NewStub(
      grpc::CreateChannel(store_.address, grpc::experimental::TlsCredentials(lenient)));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  v1::Schema schema;
  grpc::Status refused = lenient_stub->GetSchema(ctx.get(), v1::GetSchemaRequest(), &schema);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("trust domain 'other.job'"), std::string::npos)
      << refused.error_message();
  // No certificate; a certificate from another CA (refused by the client, which does not trust
  // the store, and by the store, which does not trust the certificate).
  for (const char* who : {"", "forged-alice", "forged-alice-trusting-the-job"}) {
    auto client = Client(who);
    absl::StatusOr<uint64_t> pushed =
        client->Push(Header(kAlice, 1), tensor::Share({{"w", {9, 9, 9}}}));
    EXPECT_EQ(pushed.status().code(), absl::StatusCode::kUnavailable) << who << pushed.status();
    EXPECT_FALSE(client->Pull(-1).ok()) << who;
  }
  EXPECT_EQ(Model(), before);
}

TEST_F(StoreTlsTest, AClientRefusesAServerOfAnotherRole) {
  // The store's certificate says "store": a client that expects a coordinator there gives up.
  auto stub = v1::Coordinator::NewStub(
      rpc::MakeChannel(store_.address, Certificates::Get().Of("alice"), Role::kCoordinator));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(3));
  v1::ClusterStatus status;
  EXPECT_EQ(stub->GetStatus(ctx.get(), v1::GetStatusRequest(), &status).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST(CoordinatorTlsTest, ATrainerJoinsOnlyUnderItsCertificatesName) {
  TlsStore store;
  coordinator::GrpcStoreControl stores({store.address}, Certificates::Get().Of("coordinator"),
                                       absl::Seconds(5));
  prometheus::Registry registry;
  coordinator::CoordinatorMetrics metrics(registry);
  sync::PolicyOptions policy;
  policy.mode = "asp";
  coordinator::Coordinator engine(coordinator::CoordinatorOptions{}, *sync::MakePolicy(policy),
                                  stores, base::MonotonicClock::Get(), metrics);
  engine.Start();
  absl::Mutex mu;
  std::map<std::string, int> refused;  // counted on gRPC's threads
  coordinator::SessionService service(
      engine, rpc::Authorizer(Certificates::Get().Of("coordinator"), [&](absl::string_view rpc) {
        absl::MutexLock lock(&mu);
        ++refused[std::string(rpc)];
      }));
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  ASSERT_TRUE(rpc::StartServer("127.0.0.1:0", {&service}, Certificates::Get().Of("coordinator"),
                               &server, &port)
                  .ok());
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto join = [&](const std::string& who, const std::string& name) {
    v1::Join request;
    request.set_name(name);
    client::SessionClientOptions options;
    options.join_timeout = absl::Seconds(10);
    options.credentials = Certificates::Get().Of(who);
    return client::SessionClient::Connect(address, request, options);
  };
  auto as_bob = join("alice", "bob");
  EXPECT_EQ(as_bob.status().code(), absl::StatusCode::kPermissionDenied) << as_bob.status();
  auto as_store = join("store", "store-0");
  EXPECT_EQ(as_store.status().code(), absl::StatusCode::kPermissionDenied) << as_store.status();
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(refused["Session"], 2);
  }
  EXPECT_EQ(engine.Status().trainers_size(), 0);

  auto alice = join("alice", "alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  // The membership the coordinator gave the store names her: her pushes go in under her id.
  const uint64_t id = (*alice)->welcome().trainer_id();
  client::StoreClient store_client({store.address}, Certificates::Get().Of("alice"),
                                   absl::Seconds(5));
  v1::PushHeader header = Header(id, 0);
  header.set_incarnation((*alice)->welcome().incarnation());
  ASSERT_TRUE(store_client.Initialize(header, {{"w", {0, 0}}}).ok());
  header.set_sequence(1);
  EXPECT_TRUE(store_client.Push(header, tensor::Share({{"w", {1, 1}}})).ok());

  // Any process of the job may read the status.
  auto status_stub = v1::Coordinator::NewStub(
      rpc::MakeChannel(address, Certificates::Get().Of("operator"), Role::kCoordinator));
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  v1::ClusterStatus status;
  ASSERT_TRUE(status_stub->GetStatus(ctx.get(), v1::GetStatusRequest(), &status).ok());
  EXPECT_EQ(status.live_trainers(), 1);

  // Only an operator ends training: a trainer cannot, and nothing changes when it tries.
  auto alice_stub = v1::Coordinator::NewStub(
      rpc::MakeChannel(address, Certificates::Get().Of("alice"), Role::kCoordinator));
  v1::FinishRequest finish;
  finish.set_reason("a trainer's word");
  v1::FinishResponse finished;
  auto refused_ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  EXPECT_EQ(alice_stub->Finish(refused_ctx.get(), finish, &finished).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(refused["Finish"], 1);
  }
  EXPECT_FALSE(engine.Status().done());
  auto finish_ctx = rpc::ContextWithTimeout(absl::Seconds(5));
  finish.set_reason("an operator's word");
  ASSERT_TRUE(status_stub->Finish(finish_ctx.get(), finish, &finished).ok());
  EXPECT_EQ(finished.final_round(), 0);  // asp has no final average: the trainers are told Done
  EXPECT_EQ(engine.Status().done_reason(), "an operator's word");
  v1::Leave leave;
  leave.set_reason("done");
  (*alice)->Leave(leave, false);
  engine.Stop();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
}

// Bob's Peer service, under his certificate, counting its refusals.
class PeerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int port = 0;
    ASSERT_TRUE(
        rpc::StartServer("127.0.0.1:0", {&service_}, Certificates::Get().Of("bob"), &server_, &port)
            .ok());
    bob.set_trainer_id(kBob);
    bob.set_address(absl::StrCat("127.0.0.1:", port));
  }
  void TearDown() override {
    if (server_) rpc::StopServer(*server_);
  }

  client::ExchangeInbox inbox;
  int refusals = 0;
  v1::PeerRef bob;  // where to send to him

 private:
  client::TransferMeter received_;
  client::PeerService service_{
      inbox, client::ShapeLookup({{"w", {0, 0}}}), nullptr, received_,
      rpc::Authorizer(Certificates::Get().Of("bob"), [this](absl::string_view) { ++refusals; })};
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(PeerTlsTest, OnlyTrainersSendModelsEachUnderItsOwnId) {
  const absl::Time deadline = base::MonotonicClock::Get().Now() + absl::Seconds(10);
  client::TransferMeter sent;
  client::PeerSender from_store(nullptr, sent, Certificates::Get().Of("store"));
  absl::Status refused =
      from_store.SendOne(bob, kAlice, 1, tensor::Share({{"w", {5, 5}}}), 1.0, deadline);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  client::PeerSender from_alice(nullptr, sent, Certificates::Get().Of("alice"));
  // Once the coordinator named alice's id, bob cannot send a model as hers.
  v1::PeerExchange exchange;
  v1::PeerRef* named = exchange.add_receive_from();
  named->set_trainer_id(kAlice);
  named->set_name("alice");
  inbox.NamePeers(exchange);
  client::PeerSender from_bob(nullptr, sent, Certificates::Get().Of("bob"));
  absl::Status forged =
      from_bob.SendOne(bob, kAlice, 1, tensor::Share({{"w", {6, 6}}}), 1.0, deadline);
  EXPECT_EQ(forged.code(), absl::StatusCode::kPermissionDenied) << forged;
  EXPECT_EQ(refusals, 2) << "both refusals counted";
  ASSERT_TRUE(
      from_alice.SendOne(bob, kAlice, 1, tensor::Share({{"w", {1, 2}}}), 1.0, deadline).ok());
  auto got = inbox.Collect(1, {kAlice}, deadline);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[kAlice].model.at("w"), (std::vector<float>{1, 2}));
}

// A trainer of the job that the coordinator did not name as a sender of the round is refused at
// the Peer service, counted, and nothing of it is taken.
TEST_F(PeerTlsTest, AnUnannouncedSenderIsRefused) {
  // Round 4 takes alice's model only; bob's own certificate is a trainer's of the job.
  v1::PeerExchange exchange;
  exchange.set_round(4);
  v1::PeerRef* named = exchange.add_receive_from();
  named->set_trainer_id(kAlice);
  named->set_name("alice");
  inbox.PlanRound(exchange);
  const absl::Time deadline = base::MonotonicClock::Get().Now() + absl::Seconds(10);
  client::TransferMeter sent;
  client::PeerSender from_bob(nullptr, sent, Certificates::Get().Of("bob"));
  const absl::Status refused =
      from_bob.SendOne(bob, kBob, 4, tensor::Share({{"w", {6, 6}}}), 1.0, deadline);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_EQ(refusals, 1);
  client::PeerSender from_alice(nullptr, sent, Certificates::Get().Of("alice"));
  ASSERT_TRUE(
      from_alice.SendOne(bob, kAlice, 4, tensor::Share({{"w", {1, 2}}}), 1.0, deadline).ok());
  auto got = inbox.Collect(4, {kAlice, kBob}, base::MonotonicClock::Get().Now());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[kAlice].model.at("w"), (std::vector<float>{1, 2}));
}

// Re-issuing swaps ..data to a new version folder (the three files are links through it), keeps
// the version it replaced for a process reading it right now, and removes older ones; a CA is not
// replaced unless asked.
TEST(CertificatesTest, ReissuingSwapsTheFilesTogether) {
  namespace fs = std::filesystem;
  const std::string root = Certificates::Get().root();
  absl::StatusOr<cli::CertificateAuthority> ca =
      cli::CertificateAuthority::Open(root + "/ca", rpc::kDefaultTrustDomain);
  ASSERT_TRUE(ca.ok()) << ca.status();
  const std::string dir = root + "/rotated";
  std::vector<std::string> versions;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ca->Issue({Role::kTrainer, "carol"}, dir).ok());
    versions.push_back(fs::read_symlink(dir + "/..data").string());
  }
  EXPECT_NE(versions[1], versions[2]);
  for (const char* file : {rpc::kCaFile, rpc::kCertFile, rpc::kKeyFile}) {
    EXPECT_EQ(fs::read_symlink(dir + "/" + file).string(), std::string("..data/") + file);
  }
  EXPECT_TRUE(fs::exists(dir + "/" + versions[1])) << "the version replaced last is kept";
  EXPECT_FALSE(fs::exists(dir + "/" + versions[0])) << "older ones go";
  absl::StatusOr<Credentials> credentials = Credentials::FromDirectory(dir);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->identity(), (rpc::Identity{Role::kTrainer, "carol"}));
  EXPECT_EQ(cli::CertificateAuthority::Create(root + "/ca", rpc::kDefaultTrustDomain,
                                              absl::Hours(24), /*replace=*/false)
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  // And a process refuses another role's certificate at start.
  EXPECT_EQ(rpc::CredentialsFromFlags(dir, false, Role::kStore).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(rpc::CredentialsFromFlags("", false, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A certificate never outlives its CA: its validity is cut to the CA's, and a CA with less than a
// day left issues nothing.
TEST(CertificatesTest, ACertificateEndsBeforeItsCa) {
  const std::string root = Certificates::Get().root();
  absl::StatusOr<cli::CertificateAuthority> ca =
      cli::CertificateAuthority::Open(root + "/ca", rpc::kDefaultTrustDomain);
  ASSERT_TRUE(ca.ok()) << ca.status();
  ASSERT_TRUE(ca->Issue({Role::kTrainer, "dave"}, root + "/dave", absl::Hours(24 * 365)).ok());
  absl::StatusOr<std::string> ca_pem = base::ReadFile(root + "/ca/" + rpc::kCaFile);
  absl::StatusOr<std::string> pem = base::ReadFile(root + "/dave/" + rpc::kCertFile);
  ASSERT_TRUE(ca_pem.ok() && pem.ok());
  absl::StatusOr<absl::Time> ca_expiry = rpc::ExpiryOfCertificate(*ca_pem);
  absl::StatusOr<absl::Time> expiry = rpc::ExpiryOfCertificate(*pem);
  ASSERT_TRUE(ca_expiry.ok() && expiry.ok()) << ca_expiry.status() << expiry.status();
  EXPECT_LE(*expiry, *ca_expiry);
  EXPECT_GT(*expiry, absl::Now() + absl::Hours(23)) << "a day, as the CA's two allow";
  EXPECT_EQ(rpc::ExpiryOfCertificate("not a certificate").status().code(),
            absl::StatusCode::kInvalidArgument);

  absl::StatusOr<cli::CertificateAuthority> ending = cli::CertificateAuthority::Create(
      root + "/ending-ca", rpc::kDefaultTrustDomain, absl::Hours(24), /*replace=*/false);
  ASSERT_TRUE(ending.ok()) << ending.status();
  const absl::Status refused = ending->Issue({Role::kTrainer, "erin"}, root + "/erin");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_FALSE(std::filesystem::exists(root + "/erin/" + rpc::kCertFile));
}

}  // namespace
}  // namespace syncopate
