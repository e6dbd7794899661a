// What mutual TLS costs the data plane: push+pull of a model through one store shard over loopback,
// with TLS (certificates from a throw-away CA, as `syncopate local` makes them, and the store
// authorizing every call) against plaintext, alternating run by run in one process so both see the
// same machine. Target: TLS keeps >= 0.85 of plaintext's throughput at 64 MiB. Prints a table, the
// cipher openssl s_client negotiates with the TLS shard, and one JSON line. Usage:
//   syncopate-tls-bench [--mib=64|--kib=N] [--repeats=5]
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/allocator.h"
#include "cli/certificates.h"
#include "client/store_client.h"
#include "data_plane.h"
#include "prometheus/registry.h"
#include "rpc/grpc_util.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"
#include "store/store_service.h"

namespace {

using namespace syncopate;  // NOLINT: a benchmark's main file
using bench::Median;

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

// One shard serving with `server` credentials, its membership set by a coordinator holding
// `coordinator`, and a trainer's client holding `trainer`.
class Shard {
 public:
  Shard(const rpc::Credentials& server, const rpc::Credentials& coordinator,
        const rpc::Credentials& trainer)
      : service_(table_, metrics_, 0, 1, /*incarnation=*/1, rpc::Authorizer(server, nullptr)) {
    int port = 0;
    if (absl::Status s = rpc::StartServer("127.0.0.1:0", {&service_}, server, &server_, &port);
        !s.ok()) {
      Die("store", s);
    }
    address_ = absl::StrCat("127.0.0.1:", port);
    v1::Membership membership;
    v1::Member* member = membership.add_members();
    member->set_trainer_id(1);
    member->set_incarnation(1);
    member->set_name("trainer-1");
    membership.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
    membership.set_immediate_weight(1);
    auto stub =
        v1::ParameterStore::NewStub(rpc::MakeChannel(address_, coordinator, rpc::Role::kStore));
    auto ctx = rpc::ContextWithTimeout(absl::Seconds(10));
    v1::SetMembershipReply reply;
    if (grpc::Status s = stub->SetMembership(ctx.get(), membership, &reply); !s.ok()) {
      Die("SetMembership", rpc::FromGrpcStatus(s));
    }
    client_ = std::make_unique<client::StoreClient>(std::vector<std::string>{address_}, trainer,
                                                    absl::Minutes(2));
  }
  ~Shard() { rpc::StopServer(*server_); }

  const std::string& address() const { return address_; }
  client::StoreClient& client() { return *client_; }

 private:
  prometheus::Registry registry_;
  store::StoreMetrics metrics_{registry_};
  store::ParameterTable table_;
  store::StoreService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<client::StoreClient> client_;
};

// Push then live pull of `model`: GB/s over both directions.
double PushPullGbps(client::StoreClient& client, v1::PushHeader& header,
                    const tensor::SharedTensorMap& model, size_t bytes) {
  header.set_sequence(header.sequence() + 1);
  const absl::Time start = absl::Now();
  if (absl::StatusOr<uint64_t> pushed = client.Push(header, model); !pushed.ok()) {
    Die("push", pushed.status());
  }
  if (absl::StatusOr<client::PulledModel> pulled = client.Pull(-1); !pulled.ok()) {
    Die("pull", pulled.status());
  }
  return 2.0 * bytes / absl::ToDoubleSeconds(absl::Now() - start) / 1e9;
}

// What openssl s_client negotiates with the TLS shard ("TLSv1.3, Cipher is ...").
std::string NegotiatedCipher(const std::string& address, const std::string& tls) {
  const std::string command = absl::StrCat(
      "openssl s_client -connect ", address, " -cert ", tls, "/trainer/tls.crt -key ", tls,
      "/trainer/tls.key -CAfile ", tls, "/ca/ca.crt </dev/null 2>/dev/null | grep -m1 'Cipher is'");
  FILE* out = popen(command.c_str(), "r");
  if (!out) return "unknown";
  char line[256] = {0};
  const bool read = std::fgets(line, sizeof(line), out) != nullptr;
  pclose(out);
  return read ? std::string(absl::StripAsciiWhitespace(line)) : "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  base::TuneAllocatorForLargeBuffers();
  const bench::DataPlaneFlags flags = bench::ParseDataPlaneFlags(
      argc, argv,
      "usage: syncopate-tls-bench [--mib=64|--kib=N] [--repeats=5]\n"
      "  push+pull through one store shard with mutual TLS against plaintext (bench/README.md)\n");
  const double mib = flags.mib();
  const size_t bytes = flags.bytes();
  const int repeats = flags.repeats;

  char pattern[] = "/tmp/syncopate-tls-bench-XXXXXX";
  const std::string tls = mkdtemp(pattern);
  absl::StatusOr<cli::CertificateAuthority> ca = cli::CertificateAuthority::Create(
      tls + "/ca", rpc::kDefaultTrustDomain, absl::Hours(48), /*replace=*/false);
  if (!ca.ok()) Die("CA", ca.status());
  for (auto [role, name] :
       {std::pair{rpc::Role::kStore, "store"}, std::pair{rpc::Role::kCoordinator, "coordinator"},
        std::pair{rpc::Role::kTrainer, "trainer"}}) {
    const std::string identity = role == rpc::Role::kTrainer ? "trainer-1" : name;
    if (absl::Status s = ca->Issue({role, identity}, tls + "/" + name); !s.ok()) Die(name, s);
  }
  auto credentials = [&](const std::string& who) {
    absl::StatusOr<rpc::Credentials> c = rpc::Credentials::FromDirectory(tls + "/" + who);
    if (!c.ok()) Die(who, c.status());
    return *c;
  };
  const rpc::Credentials none = rpc::Credentials::Insecure();
  Shard plain(none, none, none);
  Shard secure(credentials("store"), credentials("coordinator"), credentials("trainer"));

  const tensor::SharedTensorMap model = tensor::Share(bench::FourTensorModel(flags.floats()));
  const v1::PushHeader header = bench::TrainerOneHeader();
  v1::PushHeader plain_header = header, secure_header = header;
  for (Shard* shard : {&plain, &secure}) {
    if (absl::Status s = shard->client().Initialize(header, *model); !s.ok()) Die("initialize", s);
  }

  std::vector<double> plain_gbps, secure_gbps, ratios;
  for (int r = 0; r < repeats; ++r) {
    // Alternating which goes first, so neither always runs on a warmer machine.
    const bool plain_first = r % 2 == 0;
    double p = 0, s = 0;
    if (plain_first) p = PushPullGbps(plain.client(), plain_header, model, bytes);
    s = PushPullGbps(secure.client(), secure_header, model, bytes);
    if (!plain_first) p = PushPullGbps(plain.client(), plain_header, model, bytes);
    plain_gbps.push_back(p);
    secure_gbps.push_back(s);
    ratios.push_back(s / p);
  }
  const std::string cipher = NegotiatedCipher(secure.address(), tls);
  std::printf("model %.4g MiB, %d alternating repeats (medians)\n", mib, repeats);
  std::printf("  push+pull, plaintext          %6.2f GB/s\n", Median(plain_gbps));
  std::printf("  push+pull, mutual TLS         %6.2f GB/s\n", Median(secure_gbps));
  std::printf("  TLS / plaintext, per repeat   %6.2f [%.2f-%.2f] (target >= 0.85)\n",
              Median(ratios), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()));
  std::printf("  %s (openssl s_client against the TLS shard)\n", cipher.c_str());
  std::printf(
      "{\"model_mib\":%.4g,\"plain_gbps\":%.3f,\"tls_gbps\":%.3f,\"tls_ratio\":%.3f,"
      "\"tls_ratio_min\":%.3f,\"tls_ratio_max\":%.3f}\n",
      mib, Median(plain_gbps), Median(secure_gbps), Median(ratios),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
  std::string cleanup = "rm -rf " + tls;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
