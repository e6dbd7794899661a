// Control-plane load test: the real syncopate-coordinator and syncopate-store, started as
// processes on loopback, driven over gRPC by thousands of lightweight simulated trainers (one
// Session stream each on gRPC's callback API: join, a clock report as soon as each grant arrives
// or a step after it (--step, varied by --jitter), heartbeats at the interval the coordinator asks
// for, saying whether the trainer awaits its grant as a real one does; no models, no pushes).
// For each mode and trainer count it reports:
//   reports/s            clock reports the coordinator took per second of the measured window
//   report->grant p50/p99 from a report's write to its Proceed, per report (asp, ssp: the
//                        coordinator's own latency; round modes also wait for the round's last
//                        report, so there see close p50/p99)
//   close p50/p99        round modes (bsp, hybrid, wbsp*; 0 otherwise): from the round's last
//                        report to its last grant (the coordinator's decision, the store's close
//                        over gRPC, and the grants' way back)
//   heartbeats/s         heartbeats the trainers sent per second of the window
//   acks/s               HeartbeatAcks the coordinator sent back (to trainers awaiting a grant)
//   CPU us/msg           the coordinator process's CPU time (user+system) per message taken
//                        (report or heartbeat) in the window
//   threads              the coordinator's threads at the end of the window
// Usage:
//   syncopate-coordinator-bench [--modes=asp,bsp] [--trainers=100,1000,2000] [--seconds=10]
//                               [--step=0ms] [--jitter=0.25] [--say-awaiting=true|false]
//                               [--connections=16] [--bin-dir=DIR]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/flags.h"
#include "base/ready_file.h"
#include "base/status_macros.h"
#include "cli/child_process.h"
#include "client/store_client.h"
#include "rpc/grpc_util.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace {

using namespace syncopate;  // NOLINT: a benchmark's main file

// Runs callbacks at their due times on one thread (step delays, heartbeats).
class Scheduler {
 public:
  Scheduler() : thread_([this] { Run(); }) {}
  ~Scheduler() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    thread_.join();
  }
  void At(absl::Time when, std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    queue_.push({when, seq_++, std::move(fn)});
  }

 private:
  struct Item {
    absl::Time when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return std::tie(when, seq) > std::tie(o.when, o.seq); }
  };
  void Run() {
    while (true) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        auto due = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return stopping_ || (!queue_.empty() && queue_.top().when <= absl::Now());
        };
        const absl::Time until =
            queue_.empty() ? absl::Now() + absl::Milliseconds(20) : queue_.top().when;
        mu_.AwaitWithDeadline(absl::Condition(&due), until);
        if (stopping_) return;
        if (queue_.empty() || queue_.top().when > absl::Now()) continue;
        fn = queue_.top().fn;
        queue_.pop();
      }
      fn();
    }
  }
  absl::Mutex mu_;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// What every simulated trainer records, for the measured window only.
struct Stats {
  struct Clock {
    absl::Time last_report, last_grant;
    int reports = 0;  // written inside the window
  };
  absl::Mutex mu;
  // Set once, before the trainers start reporting, read by gRPC's threads.
  std::atomic<absl::Time> window_start{absl::InfiniteFuture()};
  std::atomic<absl::Time> window_end{absl::InfiniteFuture()};
  std::vector<double> report_to_grant_ms ABSL_GUARDED_BY(mu);
  std::map<int64_t, Clock> clocks ABSL_GUARDED_BY(mu);
  int64_t reports ABSL_GUARDED_BY(mu) = 0;
  std::atomic<int64_t> heartbeats{0};
  std::atomic<int64_t> acks{0};
  std::atomic<int> welcomed{0}, ended{0}, failed{0};

  bool InWindow(absl::Time t) const { return t >= window_start.load() && t < window_end.load(); }
};

// How every simulated trainer behaves.
struct Behaviour {
  // Each step takes `step` times a factor drawn uniformly from [1 - jitter, 1 + jitter].
  absl::Duration step;
  double jitter = 0;
  // Heartbeats say whether the trainer awaits its grant, as real trainers do (the coordinator then
  // answers them with a HeartbeatAck); false: as trainers older than the acks.
  bool say_awaiting = true;
};

// One trainer: a Session stream that reports its next clock as soon as (or --step after) each
// Proceed arrives, and heartbeats.
class SimTrainer final : public grpc::ClientBidiReactor<v1::SessionRequest, v1::Directive> {
 public:
  SimTrainer(v1::Coordinator::Stub& stub, std::string name, uint32_t rank, Stats& stats,
             Scheduler& scheduler, const Behaviour& behaviour, const std::atomic<bool>& go)
      : stats_(stats),
        scheduler_(scheduler),
        step_(behaviour.step),
        say_awaiting_(behaviour.say_awaiting),
        jitter_(1 - behaviour.jitter, 1 + behaviour.jitter),
        random_(rank),
        go_(go) {
    v1::SessionRequest join;
    join.mutable_join()->set_name(std::move(name));
    join.mutable_join()->set_rank(rank);
    join.mutable_join()->set_slowdown(1);
    ctx_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Hours(1)));
    stub.async()->Session(&ctx_, this);
    StartRead(&in_);
    Send(std::move(join));
    StartCall();
  }

  const v1::Welcome& welcome() const { return welcome_; }

  // Called once `go` is set: reports the clock granted before it (if any).
  void Begin() {
    absl::MutexLock lock(&mu_);
    if (held_grant_) ReportNextLocked(*held_grant_);
    held_grant_.reset();
  }
  void Leave() {
    v1::SessionRequest leave;
    leave.mutable_leave()->set_reason("load test over");
    absl::MutexLock lock(&mu_);
    leaving_ = true;
    SendLocked(std::move(leave));
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    const absl::Time now = absl::Now();
    if (in_.has_welcome()) {
      welcome_ = in_.welcome();
      {
        absl::MutexLock lock(&mu_);
        awaiting_ = true;  // a joiner awaits its first grant
      }
      stats_.welcomed.fetch_add(1);
      ScheduleHeartbeat(now);
    } else if (in_.has_proceed()) {
      const int64_t clock = in_.proceed().clock();
      absl::MutexLock lock(&mu_);
      awaiting_ = false;
      if (reported_clock_ == clock && stats_.InWindow(reported_at_)) {
        absl::MutexLock s(&stats_.mu);
        stats_.report_to_grant_ms.push_back(absl::ToDoubleMilliseconds(now - reported_at_));
        Stats::Clock& c = stats_.clocks[clock];
        c.last_grant = std::max(c.last_grant, now);
      }
      if (!go_.load()) {
        held_grant_ = clock;
      } else if (step_ <= absl::ZeroDuration()) {
        ReportNextLocked(clock);
      } else {
        scheduler_.At(now + step_ * jitter_(random_), [this, clock] {
          absl::MutexLock l(&mu_);
          ReportNextLocked(clock);
        });
      }
    } else if (in_.has_heartbeat_ack()) {
      if (stats_.InWindow(now)) stats_.acks.fetch_add(1);
    } else if (in_.has_evicted()) {
      stats_.failed.fetch_add(1);
      std::fprintf(stderr, "evicted: %s\n", in_.evicted().reason().c_str());
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    out_.pop_front();
    if (!ok) return;
    if (!out_.empty()) {
      StartWrite(&out_.front());
    } else if (leaving_) {
      StartWritesDone();
    }
  }

  void OnDone(const grpc::Status& status) override {
    if (!status.ok()) {
      stats_.failed.fetch_add(1);
      std::fprintf(stderr, "session ended: %s\n", status.error_message().c_str());
    }
    absl::MutexLock lock(&mu_);
    done_ = true;
    stats_.ended.fetch_add(1);
  }
  // Ends the stream now (OnDone follows).
  void Cancel() { ctx_.TryCancel(); }

 private:
  void Send(v1::SessionRequest request) {
    absl::MutexLock lock(&mu_);
    SendLocked(std::move(request));
  }
  void SendLocked(v1::SessionRequest request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (done_ || (leaving_ && !request.has_leave())) return;
    out_.push_back(std::move(request));
    if (out_.size() == 1) StartWrite(&out_.front());
  }
  void ReportNextLocked(int64_t granted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (leaving_) return;
    v1::SessionRequest report;
    report.mutable_clock()->set_clock(granted + 1);
    report.mutable_clock()->mutable_timings()->set_compute_seconds(absl::ToDoubleSeconds(step_));
    reported_clock_ = granted + 1;
    reported_at_ = absl::Now();
    awaiting_ = true;
    if (stats_.InWindow(reported_at_)) {
      absl::MutexLock s(&stats_.mu);
      ++stats_.reports;
      Stats::Clock& c = stats_.clocks[reported_clock_];
      c.last_report = std::max(c.last_report, reported_at_);
      ++c.reports;
    }
    SendLocked(std::move(report));
  }
  void ScheduleHeartbeat(absl::Time now) {
    const absl::Duration every = absl::Seconds(welcome_.heartbeat_interval_seconds());
    scheduler_.At(now + every, [this] {
      v1::SessionRequest beat;
      {
        absl::MutexLock lock(&mu_);
        if (done_ || leaving_) return;
        beat.mutable_heartbeat()->set_awaiting_grant(say_awaiting_ && awaiting_);
        SendLocked(std::move(beat));
        if (stats_.InWindow(absl::Now())) stats_.heartbeats.fetch_add(1);
      }
      ScheduleHeartbeat(absl::Now());
    });
  }

  Stats& stats_;
  Scheduler& scheduler_;
  const absl::Duration step_;
  const bool say_awaiting_;
  std::uniform_real_distribution<double> jitter_;
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  const std::atomic<bool>& go_;
  grpc::ClientContext ctx_;
  v1::Directive in_;
  v1::Welcome welcome_;

  absl::Mutex mu_;
  std::deque<v1::SessionRequest> out_ ABSL_GUARDED_BY(mu_);  // front: the write in flight
  std::optional<int64_t> held_grant_ ABSL_GUARDED_BY(mu_);
  int64_t reported_clock_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Time reported_at_ ABSL_GUARDED_BY(mu_);
  bool awaiting_ ABSL_GUARDED_BY(mu_) = false;  // reported, no Proceed since
  bool leaving_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// CPU seconds (user + system) and threads of process `pid`, from /proc.
std::pair<double, int> ProcessUsage(int pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(stat, line);
  // Fields after the command (which may hold spaces) start after the last ')'.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> f;
  for (std::string x; rest >> x;) f.push_back(x);
  if (f.size() < 18) return {0, 0};
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  // state is field 3 of stat; here index 0. utime 14, stime 15, num_threads 20 (1-based).
  return {(std::stod(f[11]) + std::stod(f[12])) / ticks, std::stoi(f[17])};
}

struct Row {
  std::string mode;
  int trainers = 0;
  int connections = 0;  // the trainers' connections to the coordinator
  double reports_per_second = 0;
  double grant_p50_ms = 0, grant_p99_ms = 0;
  double close_p50_ms = 0, close_p99_ms = 0;
  double heartbeats_per_second = 0;
  double acks_per_second = 0;
  double cpu_us_per_message = 0;
  int threads = 0;
  int failed = 0;
};

absl::StatusOr<Row> RunOne(const std::string& bin_dir, const std::string& mode, int trainers,
                           int connections, absl::Duration window, const Behaviour& behaviour) {
  const std::string dir =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/syncopate-coordinator-bench-",
                   getpid(), "-", mode, "-", trainers);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSIGN_OR_RETURN(
      auto store,
      cli::ChildProcess::Spawn(
          {bin_dir + "/syncopate-store", "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
           "--ready-file=" + dir + "/store.ready.json", "--log-level=warn", "--insecure"},
          {}, dir + "/store.log"));
  ASSIGN_OR_RETURN(base::ReadyInfo store_ready,
                   base::WaitForReadyFile(dir + "/store.ready.json", deadline));
  const std::string store_address = absl::StrCat("127.0.0.1:", store_ready.grpc_port);
  ASSIGN_OR_RETURN(auto coordinator,
                   cli::ChildProcess::Spawn(
                       {bin_dir + "/syncopate-coordinator", "--listen=127.0.0.1:0",
                        "--metrics-listen=127.0.0.1:0", "--stores=" + store_address,
                        "--mode=" + mode, absl::StrCat("--min-trainers=", trainers),
                        "--start-timeout=300s", "--eviction-timeout=60s", "--heartbeat-interval=1s",
                        "--ready-file=" + dir + "/coordinator.ready.json", "--log-level=warn",
                        // Plaintext: this measures the coordinator's own cost per event. The
                        // simulated trainers share --connections: no per-connection stream cap.
                        "--insecure", "--max-streams-per-connection=1000000"},
                       {}, dir + "/coordinator.log"));
  ASSIGN_OR_RETURN(base::ReadyInfo coordinator_ready,
                   base::WaitForReadyFile(dir + "/coordinator.ready.json", deadline));
  const std::string address = absl::StrCat("127.0.0.1:", coordinator_ready.grpc_port);

  // Trainers spread over several connections, as separate pods would have their own.
  const int channels = std::min(connections, trainers);
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("syncopate.bench_channel", c);  // distinct arguments: a connection of its own
    args.SetMaxReceiveMessageSize(-1);
    stubs.push_back(v1::Coordinator::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
  }
  // Destroyed in reverse: every stream ended (or its reactor leaked) first, then the scheduler
  // (whose callbacks name trainers), then the trainers.
  Stats stats;
  std::atomic<bool> go{false};
  std::vector<std::unique_ptr<SimTrainer>> sims;
  struct EndStreams {
    ~EndStreams() {
      for (auto& sim : sims) sim->Cancel();
      const absl::Time until = absl::Now() + absl::Seconds(30);
      while (stats.ended.load() < static_cast<int>(sims.size()) && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      if (stats.ended.load() < static_cast<int>(sims.size())) {
        for (auto& sim : sims) sim.release();  // still referred to by gRPC
      }
    }
    std::vector<std::unique_ptr<SimTrainer>>& sims;
    Stats& stats;
  };
  Scheduler scheduler;
  EndStreams end_streams{sims, stats};
  for (int i = 0; i < trainers; ++i) {
    sims.push_back(std::make_unique<SimTrainer>(*stubs[i % channels], absl::StrCat("sim-", i),
                                                static_cast<uint32_t>(i), stats, scheduler,
                                                behaviour, go));
    // The coordinator refuses joins (UNAVAILABLE) until it reached the store: wait for the first.
    if (i == 0) {
      const absl::Time until = absl::Now() + absl::Seconds(30);
      while (stats.welcomed.load() == 0 && stats.ended.load() == 0 && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(5));
      }
      if (stats.welcomed.load() == 0) {
        return absl::UnavailableError("the first simulated trainer was not welcomed; see " + dir);
      }
    }
  }
  const absl::Time joined_by = absl::Now() + absl::Seconds(120);
  while (stats.welcomed.load() < trainers && stats.ended.load() == 0 && absl::Now() < joined_by) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (stats.welcomed.load() < trainers) {
    return absl::DeadlineExceededError(absl::StrCat(stats.welcomed.load(), " of ", trainers,
                                                    " simulated trainers joined; see ", dir));
  }
  // Round modes close rounds on a store that holds a model: offer a one-float one.
  client::StoreClient store_client({store_address}, rpc::Credentials::Insecure(),
                                   absl::Seconds(10));
  v1::PushHeader header;
  header.set_trainer_id(sims[0]->welcome().trainer_id());
  header.set_incarnation(sims[0]->welcome().incarnation());
  RETURN_IF_ERROR(store_client.Initialize(header, {{"w", {0.0f}}}));

  const absl::Duration warmup = absl::Seconds(1);
  stats.window_start = absl::Now() + warmup;
  stats.window_end = stats.window_start.load() + window;
  go.store(true);
  for (auto& sim : sims) sim->Begin();
  absl::SleepFor(warmup);
  const auto [cpu_before, threads_before] = ProcessUsage(coordinator_ready.pid);
  absl::SleepFor(window);
  const auto [cpu_after, threads] = ProcessUsage(coordinator_ready.pid);
  for (auto& sim : sims) sim->Leave();
  const absl::Time ended_by = absl::Now() + absl::Seconds(60);
  while (stats.ended.load() < trainers && absl::Now() < ended_by) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const int not_ended = trainers - stats.ended.load();
  coordinator->Stop(absl::Seconds(10));
  store->Stop(absl::Seconds(10));
  if (not_ended > 0) {
    return absl::DeadlineExceededError(
        absl::StrCat(not_ended, " sessions did not end after Leave; see ", dir));
  }

  Row row;
  row.mode = mode;
  row.trainers = trainers;
  row.connections = channels;
  row.threads = threads;
  row.failed = stats.failed.load();
  absl::MutexLock lock(&stats.mu);
  row.reports_per_second = static_cast<double>(stats.reports) / absl::ToDoubleSeconds(window);
  row.grant_p50_ms = Percentile(stats.report_to_grant_ms, 0.5);
  row.grant_p99_ms = Percentile(stats.report_to_grant_ms, 0.99);
  std::vector<double> closes;
  const bool rounds = mode == "bsp" || mode == "hybrid" || mode.rfind("wbsp", 0) == 0;
  for (const auto& [clock, c] : stats.clocks) {
    // Only rounds whose every report fell inside the window: the one it cuts would seem to close
    // early.
    if (rounds && c.reports == trainers && c.last_grant > c.last_report) {
      closes.push_back(absl::ToDoubleMilliseconds(c.last_grant - c.last_report));
    }
  }
  row.close_p50_ms = Percentile(closes, 0.5);
  row.close_p99_ms = Percentile(closes, 0.99);
  row.heartbeats_per_second =
      static_cast<double>(stats.heartbeats.load()) / absl::ToDoubleSeconds(window);
  row.acks_per_second = static_cast<double>(stats.acks.load()) / absl::ToDoubleSeconds(window);
  const double messages = static_cast<double>(stats.reports + stats.heartbeats.load());
  row.cpu_us_per_message = messages > 0 ? 1e6 * (cpu_after - cpu_before) / messages : 0;
  std::filesystem::remove_all(dir);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"syncopate-coordinator-bench: the coordinator under thousands of trainers"};
  std::string modes = "asp,ssp,bsp";
  std::string counts = "100,500,1000,2000";
  std::string step = "0ms";
  double seconds = 10;
  double jitter = 0.25;
  bool say_awaiting = true;
  int connections = 16;
  std::string bin_dir = std::filesystem::path(argv[0]).parent_path().string();
  app.add_option("--modes", modes, "Modes, comma-separated");
  app.add_option("--trainers", counts, "Simulated trainer counts, comma-separated");
  app.add_option("--seconds", seconds, "Measured window per run")->check(CLI::Range(0.5, 600.0));
  app.add_option("--step", step, "Each trainer's step: its report goes this long after its grant");
  app.add_option("--jitter", jitter,
                 "Steps vary uniformly by this fraction either way (trainers drift out of phase)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--say-awaiting", say_awaiting,
                 "Heartbeats say whether the trainer awaits its grant, as real trainers do "
                 "(false: as trainers before HeartbeatAck)");
  app.add_option("--connections", connections,
                 "Connections the simulated trainers share (at most one per trainer, as pods)")
      ->check(CLI::PositiveNumber);
  app.add_option("--bin-dir", bin_dir, "Where syncopate-store and syncopate-coordinator are");
  CLI11_PARSE(app, argc, argv);
  // A connection per trainer needs two descriptors per trainer here and in the coordinator (which
  // inherits the limit): the soft limit up to the hard one.
  if (rlimit files; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  absl::Duration step_time;
  if (!absl::ParseDuration(step, &step_time) || step_time < absl::ZeroDuration()) {
    std::fprintf(stderr, "--step: not a duration: %s\n", step.c_str());
    return 2;
  }
  std::vector<int> trainer_counts;
  for (const std::string& c : base::SplitList(counts)) {
    int n = 0;
    if (!absl::SimpleAtoi(c, &n) || n <= 0) {
      std::fprintf(stderr, "--trainers: not a positive count: %s\n", c.c_str());
      return 2;
    }
    trainer_counts.push_back(n);
  }

  std::printf("%-6s %8s %10s %12s %8s %10s %10s %10s %10s %10s %8s\n", "mode", "trainers",
              "reports/s", "heartbeats/s", "acks/s", "grant p50", "grant p99", "close p50",
              "close p99", "CPU us/msg", "threads");
  std::vector<std::string> json;
  int status = 0;
  for (const std::string& mode : base::SplitList(modes)) {
    for (int n : trainer_counts) {
      absl::StatusOr<Row> row = RunOne(bin_dir, mode, n, connections, absl::Seconds(seconds),
                                       Behaviour{step_time, jitter, say_awaiting});
      if (!row.ok()) {
        std::fprintf(stderr, "%s, %d trainers: %s\n", mode.c_str(), n,
                     row.status().ToString().c_str());
        status = 1;
        continue;
      }
      std::printf("%-6s %8d %10.0f %12.0f %8.0f %10.2f %10.2f %10.2f %10.2f %10.1f %8d%s\n",
                  mode.c_str(), n, row->reports_per_second, row->heartbeats_per_second,
                  row->acks_per_second, row->grant_p50_ms, row->grant_p99_ms, row->close_p50_ms,
                  row->close_p99_ms, row->cpu_us_per_message, row->threads,
                  row->failed ? absl::StrCat("  (", row->failed, " sessions failed)").c_str() : "");
      std::fflush(stdout);
      json.push_back(absl::StrCat(
          "{\"mode\":\"", mode, "\",\"trainers\":", n, ",\"connections\":", row->connections,
          ",\"reports_per_second\":", row->reports_per_second, ",\"heartbeats_per_second\":",
          row->heartbeats_per_second, ",\"acks_per_second\":", row->acks_per_second,
          ",\"grant_p50_ms\":", row->grant_p50_ms, ",\"grant_p99_ms\":", row->grant_p99_ms,
          ",\"close_p50_ms\":", row->close_p50_ms, ",\"close_p99_ms\":", row->close_p99_ms,
          ",\"cpu_us_per_message\":", row->cpu_us_per_message, ",\"threads\":", row->threads,
          ",\"failed_sessions\":", row->failed, "}"));
      if (row->failed) status = 1;
    }
  }
  std::printf("{\"coordinator_bench\":[%s]}\n", absl::StrJoin(json, ",").c_str());
  return status;
}
