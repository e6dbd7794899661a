// Checkpoint stall benchmark: how long one store shard's pushes wait while a checkpoint of a large
// model is taken (the real ParameterTable and Checkpointer, writing to disk), per push kind:
//   immediate pushes (asp, ssp, dssp): the checkpoint shares the live model's tensors, and a push
//     to a tensor it still holds (until written) copies that tensor (copy on write);
//   round pushes (bsp, wbsp, hybrid): the checkpoint shares the newest round snapshot, and a round
//     closes after every 8 pushes (one per trainer).
// A pusher applies one push of one tensor every --interval, round-robin over 8 trainers; the run
// alternates windows without a checkpoint (the reference) and windows with one, after a first
// checkpoint reported apart. Reported: the push latency p50 without, the p99 and max of pushes
// that overlapped a checkpoint, the table lock's hold (ParameterTable::Durable) and the whole
// checkpoint, the max during the first checkpoint, and memcpy of the model measured in the same
// run (what a copy of the model costs). Prints a table and one JSON line. Usage:
//   syncopate-checkpoint-bench [--mib=1024] [--tensors=256] [--repeats=3] [--dir=/tmp]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/allocator.h"
#include "prometheus/registry.h"
#include "rpc/test_pushes.h"
#include "store/checkpoint.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"

namespace {

using namespace syncopate;  // NOLINT: a benchmark's main file

constexpr uint64_t kTrainers = 8;

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct Push {
  absl::Time start;
  double seconds;
};

struct Figures {
  std::string kind;
  double base_p50 = 0, during_p99 = 0, during_max = 0, first_max = 0, durable_seconds = 0,
         checkpoint_seconds = 0;
  size_t during_pushes = 0;
};

Figures Run(v1::ApplyMode mode, size_t mib, size_t tensors, int repeats, const std::string& dir,
            absl::Duration interval) {
  store::ParameterTable table;
  prometheus::Registry registry;
  store::StoreMetrics metrics(registry);
  std::vector<store::TrainerKey> members;
  for (uint64_t t = 1; t <= kTrainers; ++t) members.push_back({t, 1});
  table.SetMembers(members);
  const size_t floats = mib * 1024 * 1024 / sizeof(float) / tensors;
  tensor::TensorMap model;
  for (size_t i = 0; i < tensors; ++i) model[absl::StrCat("t", i)].assign(floats, 0.5f);
  if (!table.Initialize(rpc::testing::Stage(rpc::testing::Header(1, 1, 0), model)).ok()) {
    std::abort();
  }
  // One staged delta per tensor, reused (Apply takes a copy).
  std::vector<rpc::StagedPush> deltas;
  for (size_t i = 0; i < tensors; ++i) {
    deltas.push_back(rpc::testing::Stage(rpc::testing::Header(1, 1, 0, mode, 0.125f),
                                         {{absl::StrCat("t", i), model.begin()->second}}));
  }
  model.clear();
  store::Checkpointer checkpointer(table, metrics, dir, 0, 1);

  absl::Mutex mu;
  std::vector<Push> pushes;
  std::atomic<bool> stop{false};
  std::thread pusher([&] {
    for (uint64_t n = 1; !stop; ++n) {
      rpc::StagedPush push = deltas[n % tensors];
      const uint64_t trainer = 1 + n % kTrainers;
      push.header.set_trainer_id(trainer);
      push.header.set_sequence(n);
      push.header.set_clock(static_cast<int64_t>(n));
      const absl::Time start = absl::Now();
      absl::Status applied = table.Apply(std::move(push)).status();
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      if (!applied.ok()) {
        std::fprintf(stderr, "push failed: %s\n", applied.ToString().c_str());
        std::abort();
      }
      // A round of round pushes closes once every trainer pushed once (as in bsp), on the
      // pusher's thread between two pushes: not timed.
      if (mode == v1::APPLY_MODE_ROUND && n % kTrainers == 0) {
        std::vector<store::RoundCut> cuts;
        for (const store::TrainerKey& m : members) cuts.push_back({m, static_cast<int64_t>(n)});
        const int64_t round = static_cast<int64_t>(n / kTrainers);
        if (!table.CloseRound({round, cuts, v1::AGGREGATION_SCALED, 1.0}).ok()) std::abort();
      }
      {
        absl::MutexLock lock(&mu);
        pushes.push_back({start, seconds});
      }
      absl::SleepFor(interval);
    }
  });

  Figures f;
  f.kind = mode == v1::APPLY_MODE_ROUND ? "round" : "immediate";
  // The process's first checkpoint is reported apart: its copies on write find no buffer to
  // recycle yet (TensorBuffers), so each takes fresh memory; the later ones are the steady state.
  std::vector<double> base, during, first, durable, whole;
  for (int r = 0; r <= repeats; ++r) {
    const absl::Time base_start = absl::Now();
    absl::SleepFor(absl::Seconds(1));
    const absl::Time base_end = absl::Now();
    const absl::Time c0 = absl::Now();
    table.Durable();  // the lock hold alone, then the real checkpoint
    const double hold = absl::ToDoubleSeconds(absl::Now() - c0);
    const absl::Time c1 = absl::Now();
    if (!checkpointer.SaveIfChanged().ok()) std::abort();
    const absl::Time c2 = absl::Now();
    if (r > 0) {
      durable.push_back(hold);
      whole.push_back(absl::ToDoubleSeconds(c2 - c1));
    }
    absl::MutexLock lock(&mu);
    for (const Push& p : pushes) {
      const absl::Time end = p.start + absl::Seconds(p.seconds);
      if (p.start >= base_start && end <= base_end) base.push_back(p.seconds);
      if (end > c0 && p.start < c2) (r == 0 ? first : during).push_back(p.seconds);
    }
    pushes.clear();
  }
  stop = true;
  pusher.join();
  f.base_p50 = Quantile(base, 0.5);
  f.during_p99 = Quantile(during, 0.99);
  f.during_max = Quantile(during, 1.0);
  f.first_max = Quantile(first, 1.0);
  f.during_pushes = during.size();
  f.durable_seconds = Quantile(durable, 0.5);
  f.checkpoint_seconds = Quantile(whole, 0.5);
  return f;
}

double MemcpySeconds(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes);
  const absl::Time start = absl::Now();
  std::memcpy(b.data(), a.data(), bytes);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (b[bytes / 2] != 1) std::abort();
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  base::TuneAllocatorForLargeBuffers();
  size_t mib = 1024, tensors = 256;
  int repeats = 3;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) { return arg.substr(std::strlen(flag)); };
    const char* usage =
        "usage: syncopate-checkpoint-bench [--mib=1024] [--tensors=256] [--repeats=3] "
        "[--dir=/tmp]\n"
        "  how long pushes wait while a checkpoint of the model is taken (bench/README.md)\n";
    if (arg == "--help" || arg == "-h") {
      std::printf("%s", usage);
      return 0;
    } else if (arg.rfind("--mib=", 0) == 0) {
      mib = std::stoul(value("--mib="));
    } else if (arg.rfind("--tensors=", 0) == 0) {
      tensors = std::stoul(value("--tensors="));
    } else if (arg.rfind("--repeats=", 0) == 0) {
      repeats = std::stoi(value("--repeats="));
    } else if (arg.rfind("--dir=", 0) == 0) {
      dir = value("--dir=");
    } else {
      std::fprintf(stderr, "unknown argument %s\n%s", arg.c_str(), usage);
      return 2;
    }
  }
  dir = absl::StrCat(dir, "/syncopate-checkpoint-bench-", getpid());
  if (std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()) != 0) return 1;
  const absl::Duration interval = absl::Milliseconds(5);
  std::vector<Figures> rows = {Run(v1::APPLY_MODE_IMMEDIATE, mib, tensors, repeats, dir, interval),
                               Run(v1::APPLY_MODE_ROUND, mib, tensors, repeats, dir, interval)};
  std::vector<double> copies;
  for (int r = 0; r < repeats; ++r) copies.push_back(MemcpySeconds(mib * 1024 * 1024));
  const double memcpy_seconds = Quantile(copies, 0.5);
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());

  std::printf(
      "model %zu MiB in %zu tensors, a push of one tensor every %s; memcpy of the model %.3fs\n",
      mib, tensors, absl::FormatDuration(interval).c_str(), memcpy_seconds);
  std::printf("%-10s %-12s %-13s %-13s %-16s %-14s %s\n", "pushes", "p50 without", "p99 during",
              "max during", "lock hold (s)", "checkpoint (s)", "max during the first");
  std::string json = absl::StrCat("{\"mib\":", mib, ",\"tensors\":", tensors,
                                  ",\"memcpy_seconds\":", memcpy_seconds, ",\"rows\":[");
  for (const Figures& f : rows) {
    std::printf("%-10s %-12.4f %-13.4f %-13.4f %-16.4f %-14.2f %.4f\n", f.kind.c_str(), f.base_p50,
                f.during_p99, f.during_max, f.durable_seconds, f.checkpoint_seconds, f.first_max);
    absl::StrAppend(&json, &f == &rows[0] ? "" : ",", "{\"kind\":\"", f.kind,
                    "\",\"p50_without\":", f.base_p50, ",\"p99_during\":", f.during_p99,
                    ",\"max_during\":", f.during_max, ",\"max_during_first\":", f.first_max,
                    ",\"pushes_during\":", f.during_pushes,
                    ",\"lock_hold_seconds\":", f.durable_seconds,
                    ",\"checkpoint_seconds\":", f.checkpoint_seconds, "}");
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}
