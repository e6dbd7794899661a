// Data-plane benchmark for one store shard over loopback.
//   push+pull throughput of a model  /  raw loopback TCP throughput     (target >= 0.7)
//   store apply rate of a delta      /  in-place float add, same buffer (target >= 0.8)
//   a round's close, N trainers' ROUND pushes in the table / one in-place float add of the model
// The references are measured in the same run, interleaved with the measurement (after it, with
// --transfer-only, which also leaves the round out), because the machine is shared and noisy.
// Prints a table and one JSON line. Usage:
//   syncopate-store-bench [--mib=64|--kib=N] [--repeats=5] [--transfer-only] [--round-trainers=5]
//                         [--transport=stream|call]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "base/allocator.h"
#include "client/store_client.h"
#include "data_plane.h"
#include "prometheus/registry.h"
#include "rpc/chunk_payload.h"
#include "rpc/grpc_util.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"
#include "store/store_service.h"

namespace {

using namespace syncopate;  // NOLINT: a benchmark's main file
using bench::Median;

// Seconds to send `bytes` one way over a loopback TCP connection, then the same back (as a push
// followed by a pull moves the model both ways).
double TcpRoundTripSeconds(size_t bytes) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  listen(listener, 1);
  std::vector<char> out(1 << 20, 'x');
  auto pump = [&](int fd, bool send_first) {
    std::vector<char> in(1 << 20);
    for (int phase = 0; phase < 2; ++phase) {
      size_t done = 0;
      const bool sending = (phase == 0) == send_first;
      while (done < bytes) {
        const size_t n = std::min(out.size(), bytes - done);
        const ssize_t r = sending ? write(fd, out.data(), n) : read(fd, in.data(), n);
        if (r <= 0) return;
        done += r;
      }
    }
  };
  std::thread server([&] {
    int fd = accept(listener, nullptr, nullptr);
    pump(fd, false);
    close(fd);
  });
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const absl::Time start = absl::Now();
  pump(fd, true);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  close(fd);
  server.join();
  close(listener);
  return seconds;
}

// `values` as a received chunk's payload: in gRPC's 64 KiB receive buffers, starting at an odd
// byte (behind the message's fields), so that values are unaligned and some straddle two buffers.
rpc::ChunkPayload ReceivedPayload(const std::vector<float>& values) {
  constexpr size_t kBuffer = 64 << 10, kLead = 13;
  std::string bytes(kLead, '\0');
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += kBuffer) {
    slices.emplace_back(bytes.data() + at, std::min(kBuffer, bytes.size() - at));
  }
  return rpc::ChunkPayload(std::move(slices), kLead, values.size() * sizeof(float));
}

// The model as a push of `header` staged by the store: each tensor one chunk, its payload laid out
// as a push's arrives (ReceivedPayload).
rpc::StagedPush StagedModel(const v1::PushHeader& header, const tensor::TensorMap& model) {
  rpc::StagedPush staged;
  staged.header = header;
  for (const auto& [name, values] : model) {
    staged.tensors.push_back({name, {static_cast<int64_t>(values.size())}});
    staged.chunks.push_back({staged.tensors.size() - 1, 0, ReceivedPayload(values)});
  }
  return staged;
}

}  // namespace

int main(int argc, char** argv) {
  base::TuneAllocatorForLargeBuffers();
  const bench::DataPlaneFlags flags = bench::ParseDataPlaneFlags(
      argc, argv,
      "usage: syncopate-store-bench [--mib=64|--kib=N] [--repeats=5] [--transfer-only] "
      "[--round-trainers=5] [--transport=stream|call] [--chunk-kib=1024]\n"
      "  push+pull of a model through one store shard over loopback against raw loopback TCP,\n"
      "  a delta's apply against an in-place float add, and a round's close (bench/README.md)\n");
  const double mib = flags.mib();
  const size_t floats = flags.floats(), bytes = flags.bytes();
  const int repeats = flags.repeats;

  prometheus::Registry registry;
  store::StoreMetrics metrics(registry);
  store::ParameterTable table;
  store::StoreService service(table, metrics, 0, 1, /*incarnation=*/1,
                              rpc::Authorizer(rpc::Credentials::Insecure(), nullptr));
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  if (!rpc::StartServer("127.0.0.1:0", {&service}, rpc::Credentials::Insecure(), &server, &port)
           .ok())
    return 1;
  table.SetMembers({{1, 1}});
  client::StoreClient client({"127.0.0.1:" + std::to_string(port)}, rpc::Credentials::Insecure(),
                             absl::Minutes(2), flags.chunk_bytes);
  client.set_transport(flags.call_per_transfer ? client::Transport::kCall
                                               : client::Transport::kStream);

  const tensor::SharedTensorMap shared = tensor::Share(bench::FourTensorModel(floats));
  const tensor::TensorMap& model = *shared;
  v1::PushHeader header = bench::TrainerOneHeader();
  if (!client.Initialize(header, model).ok()) return 1;

  std::vector<double> store_gbps, tcp_gbps, apply_gbps, add_gbps;
  std::vector<double> push_gbps, pull_gbps, round_pull_gbps;
  std::vector<float> a(floats, 1.0f), b(floats, 0.5f);
  // The reference: a += b over buffers of the model's size.
  auto in_place_add_seconds = [&] {
    const absl::Time start = absl::Now();
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    for (size_t i = 0; i < floats; ++i) pa[i] += pb[i];
    return absl::ToDoubleSeconds(absl::Now() - start);
  };
  // Every push and staged apply takes the next sequence: one at or below the last would be a
  // duplicate, which the store does not apply.
  int64_t sequence = 0;
  // One push and live pull, counted in the figures unless a warm-up; false on an error.
  auto push_pull = [&](bool timed) {
    header.set_sequence(++sequence);
    const absl::Time start = absl::Now();
    if (!client.Push(header, shared).ok()) return false;
    const absl::Time pushed = absl::Now();
    if (!client.Pull(-1).ok()) return false;
    const absl::Time end = absl::Now();
    if (timed) {
      store_gbps.push_back(2.0 * bytes / absl::ToDoubleSeconds(end - start) / 1e9);
      push_gbps.push_back(bytes / absl::ToDoubleSeconds(pushed - start) / 1e9);
      pull_gbps.push_back(bytes / absl::ToDoubleSeconds(end - pushed) / 1e9);
    }
    return true;
  };
  if (flags.transfer_only) {
    if (!push_pull(/*timed=*/false)) return 1;
    for (int r = 0; r < repeats; ++r) {
      if (!push_pull(/*timed=*/true)) return 1;
    }
  }
  for (int r = 0; r < repeats; ++r) {
    tcp_gbps.push_back(2.0 * bytes / TcpRoundTripSeconds(bytes) / 1e9);
    if (!flags.transfer_only && !push_pull(/*timed=*/true)) return 1;
    // A round pull: served from the published snapshot (what every puller of a round shares).
    const absl::Time round_start = absl::Now();
    absl::StatusOr<client::PulledModel> round = client.Pull(0);
    if (!round.ok()) return 1;
    round_pull_gbps.push_back(bytes / absl::ToDoubleSeconds(absl::Now() - round_start) / 1e9);

    // Apply alone: a staged push of the same size straight into the table, its payloads laid
    // out as a push's arrive (ReceivedPayload).
    header.set_sequence(++sequence);
    rpc::StagedPush staged = StagedModel(header, model);
    const absl::Time apply_start = absl::Now();
    if (!table.Apply(std::move(staged)).ok()) return 1;
    apply_gbps.push_back(bytes / absl::ToDoubleSeconds(absl::Now() - apply_start) / 1e9);

    add_gbps.push_back(bytes / in_place_add_seconds() / 1e9);
  }
  rpc::StopServer(*server);

  // A round: every trainer's ROUND push staged into the table (their arrival), then the close that
  // takes them all (BSP's round, on every trainer's critical path), against one in-place add timed
  // right after it.
  const int trainers = flags.transfer_only ? 0 : flags.round_trainers;
  std::vector<store::TrainerKey> members;
  for (int k = 1; k <= trainers + 1; ++k) members.push_back({static_cast<uint64_t>(k), 1});
  table.SetMembers(members);  // trainer 1 is the one above, with its immediate pushes
  std::vector<double> round_arrival_ms, round_close_ms, round_close_adds;
  for (int r = 0; r < repeats && trainers > 0; ++r) {
    const int64_t round = table.last_closed_round() + 1;
    std::vector<store::RoundCut> cuts;
    double arrival_seconds = 0;
    for (int k = 2; k <= trainers + 1; ++k) {
      v1::PushHeader round_header = header;
      round_header.set_trainer_id(k);
      round_header.set_sequence(r + 1);
      round_header.set_apply_mode(v1::APPLY_MODE_ROUND);
      round_header.set_clock(r + 1);
      rpc::StagedPush staged = StagedModel(round_header, model);
      const absl::Time arrival_start = absl::Now();
      if (!table.Apply(std::move(staged)).ok()) return 1;
      arrival_seconds += absl::ToDoubleSeconds(absl::Now() - arrival_start);
      cuts.push_back({{static_cast<uint64_t>(k), 1}, r + 1});
    }
    const absl::Time close_start = absl::Now();
    absl::StatusOr<store::CloseResult> closed =
        table.CloseRound({round, cuts, v1::AGGREGATION_MEAN, 1.0});
    const double close_seconds = absl::ToDoubleSeconds(absl::Now() - close_start);
    if (!closed.ok() || closed->pushes != static_cast<uint32_t>(trainers)) return 1;
    round_arrival_ms.push_back(1e3 * arrival_seconds / trainers);
    round_close_ms.push_back(1e3 * close_seconds);
    round_close_adds.push_back(close_seconds / in_place_add_seconds());
  }

  // Every timed push was applied: a duplicate costs the store no apply, and would flatter it.
  if (metrics.pushes_duplicate.Value() != 0) {
    std::fprintf(stderr, "%.0f pushes were taken as duplicates: the figures would be void\n",
                 metrics.pushes_duplicate.Value());
    return 1;
  }

  const double store = Median(store_gbps), tcp = Median(tcp_gbps);
  const double apply = Median(apply_gbps), add = Median(add_gbps) + 0 * a[floats / 2];
  std::printf("model %.4g MiB, %d repeats (medians), pushes and pulls %s\n", mib, repeats,
              flags.call_per_transfer ? "a call each" : "on one Transfer stream");
  std::printf("  push+pull through the store   %6.2f GB/s\n", store);
  std::printf("  raw loopback TCP (both ways)  %6.2f GB/s   ratio %.2f (target >= 0.70)\n", tcp,
              store / tcp);
  // Per transfer, too: what a small model's push and pull cost is latency more than throughput.
  std::printf("    push alone                  %6.2f GB/s   %.3f ms\n", Median(push_gbps),
              1e3 * bytes / 1e9 / Median(push_gbps));
  std::printf("    live pull alone             %6.2f GB/s   %.3f ms\n", Median(pull_gbps),
              1e3 * bytes / 1e9 / Median(pull_gbps));
  std::printf("    round pull alone            %6.2f GB/s\n", Median(round_pull_gbps));
  std::printf("  store apply of a delta        %6.2f GB/s\n", apply);
  std::printf("  in-place float add            %6.2f GB/s   ratio %.2f (target >= 0.80)\n", add,
              apply / add);
  if (trainers > 0) {
    std::printf(
        "  a round of %d trainers' pushes: each push's arrival %.2f ms, the close %.2f ms\n",
        trainers, Median(round_arrival_ms), Median(round_close_ms));
    std::printf("    the close in in-place adds of the model  %.2f\n", Median(round_close_adds));
  }
  std::printf(
      "{\"model_mib\":%.4g,\"store_gbps\":%.3f,\"tcp_gbps\":%.3f,\"transfer_ratio\":%.3f,"
      "\"apply_gbps\":%.3f,\"add_gbps\":%.3f,\"apply_ratio\":%.3f,\"push_gbps\":%.3f,"
      "\"pull_gbps\":%.3f,\"round_pull_gbps\":%.3f",
      mib, store, tcp, store / tcp, apply, add, apply / add, Median(push_gbps), Median(pull_gbps),
      Median(round_pull_gbps));
  if (trainers > 0) {
    std::printf(
        ",\"round_trainers\":%d,\"round_arrival_ms\":%.3f,\"round_close_ms\":%.3f,"
        "\"round_close_adds\":%.3f",
        trainers, Median(round_arrival_ms), Median(round_close_ms), Median(round_close_adds));
  }
  std::printf("}\n");
  return 0;
}
