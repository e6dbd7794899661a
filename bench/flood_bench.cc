// What a flood of refused and abandoned push streams leaves in a store's memory: the real
// syncopate-store binary, flooded over loopback with whole model-sized Initialize streams that it
// assembles and then refuses (no membership names their trainer) and with streams cancelled
// half-way, run with --release-memory-every=0s (memory kept, as before) and =1s, back to back. The
// store's resident memory (VmRSS) before, right after the flood, and after it has been quiet for
// a while. Usage:
//   syncopate-flood-bench [--mib=64] [--streams=8] [--rounds=4] [--quiet=8s] [--store=PATH]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/flags.h"
#include "base/ready_file.h"
#include "cli/child_process.h"
#include "rpc/grpc_util.h"
#include "syncopate/v1/store.grpc.pb.h"
#include "tensor/tensor.h"

namespace {

using namespace syncopate;  // NOLINT: a benchmark's main file

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

double RssMib(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "VmRSS:")) return std::atof(std::string(rest).c_str()) / 1024;
  }
  return -1;
}

// One Initialize stream of a `floats`-element tensor; `abandon` cancels it half-way.
void Flood(v1::ParameterStore::Stub& stub, const std::vector<float>& values, bool abandon,
           uint64_t trainer) {
  auto ctx = rpc::ContextWithTimeout(absl::Seconds(60));
  v1::PushReply reply;
  auto writer = stub.Initialize(ctx.get(), &reply);
  v1::PushMessage message;
  message.mutable_header()->set_trainer_id(trainer);
  message.mutable_header()->set_incarnation(1);
  tensor::ToProto({"flood", {static_cast<int64_t>(values.size())}},
                  message.mutable_header()->add_tensors());
  writer->Write(message);
  size_t sent = 0;
  tensor::ForEachChunk("flood", values, tensor::kMaxChunkBytes, [&](v1::TensorChunk& chunk) {
    if (abandon && sent > values.size() * sizeof(float) / 2) return;
    sent += chunk.data().size();
    message.mutable_chunk()->Swap(&chunk);
    writer->Write(message);
    message.mutable_chunk()->Swap(&chunk);
  });
  if (abandon) {
    ctx->TryCancel();
  } else {
    writer->WritesDone();
  }
  writer->Finish();  // refused (UNAVAILABLE: no membership names the trainer) or cancelled
}

struct Row {
  double before = 0, flooded = 0, quiet = 0;
};

Row Measure(const std::string& store, const std::string& release_every, int mib, int streams,
            int rounds, absl::Duration quiet) {
  char dir[] = "/tmp/syncopate-flood-XXXXXX";
  if (mkdtemp(dir) == nullptr) Die("mkdtemp");
  const std::string ready = absl::StrCat(dir, "/ready.json");
  auto child = cli::ChildProcess::Spawn(
      {store, "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0", "--insecure",
       "--ready-file=" + ready, "--release-memory-every=" + release_every, "--log-level=error"},
      {}, absl::StrCat(dir, "/store.log"));
  if (!child.ok()) Die(child.status().ToString());
  auto info = base::WaitForReadyFile(ready, absl::Now() + absl::Seconds(30));
  if (!info.ok()) Die(info.status().ToString());
  auto stub = v1::ParameterStore::NewStub(
      rpc::MakeChannel(absl::StrCat("127.0.0.1:", info->grpc_port), rpc::Credentials::Insecure(),
                       rpc::Role::kStore));
  Row row;
  row.before = RssMib((*child)->pid());
  const std::vector<float> values(static_cast<size_t>(mib) << 18, 0.5f);
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::thread> threads;
    for (int s = 0; s < streams; ++s) {
      threads.emplace_back([&, s] { Flood(*stub, values, /*abandon=*/s % 2 == 1, 1000 + s); });
    }
    for (std::thread& t : threads) t.join();
  }
  row.flooded = RssMib((*child)->pid());
  absl::SleepFor(quiet);  // a benchmark: the store is left alone
  row.quiet = RssMib((*child)->pid());
  (*child)->Stop(absl::Seconds(5));
  std::system(absl::StrCat("rm -rf ", dir).c_str());
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 64, streams = 8, rounds = 4;
  absl::Duration quiet = absl::Seconds(8);
  std::string store = absl::StrCat(
      std::string(argv[0]).substr(0, std::string(argv[0]).rfind('/') + 1), "syncopate-store");
  const char* usage =
      "usage: syncopate-flood-bench [--mib=64] [--streams=8] [--rounds=4] [--quiet=8s] "
      "[--store=PATH]\n"
      "  what a flood of refused and abandoned pushes leaves in a store's memory\n";
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s", usage);
      return 0;
    }
    if (absl::ConsumePrefix(&arg, "--mib=") && absl::SimpleAtoi(arg, &mib)) continue;
    if (absl::ConsumePrefix(&arg, "--streams=") && absl::SimpleAtoi(arg, &streams)) continue;
    if (absl::ConsumePrefix(&arg, "--rounds=") && absl::SimpleAtoi(arg, &rounds)) continue;
    if (absl::ConsumePrefix(&arg, "--store=")) {
      store = std::string(arg);
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--quiet=")) {
      auto d = base::ParseDuration(std::string(arg));
      if (!d.ok()) Die(d.status().ToString());
      quiet = *d;
      continue;
    }
    std::fprintf(stderr, "unknown argument %s\n%s", argv[i], usage);
    return 2;
  }
  std::printf("%d rounds of %d streams of %d MiB (every second one abandoned half-way)\n", rounds,
              streams, mib);
  std::printf("%-24s %12s %12s %12s\n", "--release-memory-every", "before MiB", "flooded MiB",
              "quiet MiB");
  for (const char* every : {"0s", "1s"}) {
    const Row row = Measure(store, every, mib, streams, rounds, quiet);
    std::printf("%-24s %12.0f %12.0f %12.0f\n", every, row.before, row.flooded, row.quiet);
  }
  return 0;
}
