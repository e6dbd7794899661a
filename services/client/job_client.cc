#include "client/job_client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "base/ready_file.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace syncopate::client {

absl::StatusOr<std::unique_ptr<JobClient>> JobClient::Join(JobOptions options,
                                                           Parameters& parameters) {
  if (options.coordinator.empty()) return absl::InvalidArgumentError("no coordinator address");
  if (options.name.empty()) return absl::InvalidArgumentError("no trainer name");
  if (!(options.session.slowdown >= 1.0)) {
    return absl::InvalidArgumentError("the slowdown must be at least 1");
  }
  for (const auto& [what, d] :
       {std::pair{"join timeout", options.join_timeout},
        std::pair{"RPC timeout", options.rpc_timeout},
        std::pair{"directive timeout", options.session.directive_timeout}}) {
    if (d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat("the ", what, " must be positive"));
    }
  }
  if (options.session.max_steps < 0 || options.session.eval_interval < absl::ZeroDuration() ||
      options.session.step_time < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max steps, the eval interval and the step time cannot be negative");
  }
  if (options.max_rejoins < 0) return absl::InvalidArgumentError("max rejoins cannot be negative");
  if (parameters.Specs().empty()) return absl::InvalidArgumentError("no parameters registered");
  std::unique_ptr<JobClient> job(new JobClient());
  if (!options.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(job->metrics_, metrics::MetricsServer::Start(options.metrics_listen));
    job->registry_ = job->metrics_->shared_registry();
  } else {
    job->registry_ = std::make_shared<prometheus::Registry>();
  }
  job->trainer_metrics_ = std::make_unique<TrainerMetrics>(*job->registry_);

  // The Peer service runs before the join: the coordinator hands its address to other trainers.
  tensor::TensorMap shapes;
  RETURN_IF_ERROR(parameters.Read(&shapes));
  options.peer.credentials = options.credentials;
  options.peer.on_refusal = [metrics = job->trainer_metrics_.get()](absl::string_view rpc) {
    metrics->refused_calls.Add({{"rpc", std::string(rpc)}}).Increment();
  };
  ASSIGN_OR_RETURN(job->peers_, PeerNode::Start(options.peer, shapes));
  job->trace_ = std::make_unique<TraceWriter>(options.trace_file);
  job->options_ = std::move(options);
  job->parameters_ = &parameters;
  RETURN_IF_ERROR(job->Connect());
  RETURN_IF_ERROR(base::WriteReadyFile(job->options_.ready_file, {0, job->metrics_port(), 0}));
  return job;
}

absl::Status JobClient::Connect() {
  v1::Join join;
  join.set_name(options_.name);
  join.set_peer_address(peers_->address());
  join.set_rank(options_.rank);
  join.set_slowdown(options_.session.slowdown);
  SessionClientOptions session_options;
  session_options.join_timeout = options_.join_timeout;
  session_options.credentials = options_.credentials;
  session_options.interrupted = options_.leave_interrupted;
  ASSIGN_OR_RETURN(std::unique_ptr<SessionClient> coordinator,
                   SessionClient::Connect(options_.coordinator, join, session_options));
  const v1::Welcome& welcome = coordinator->welcome();
  coordinator->OnPeerDirective(
      [node = peers_.get()](const v1::Directive& d) { node->HandleDirective(d); });
  // The link limits hold for all of the trainer's traffic: store pushes and pulls too.
  auto store = std::make_unique<StoreClient>(
      std::vector<std::string>(welcome.store_addresses().begin(), welcome.store_addresses().end()),
      options_.credentials, options_.rpc_timeout, tensor::kDefaultChunkBytes, peers_->limits());
  store->set_metrics(trainer_metrics_.get());
  store->set_transport(options_.store_transport);
  SessionOptions limits = options_.session;
  // The step limit counts every session of this trainer.
  if (limits.max_steps > 0)
    limits.max_steps = std::max<int64_t>(1, limits.max_steps - steps_before_);
  auto session =
      std::make_unique<Session>(limits, *coordinator, *store, *parameters_, *trainer_metrics_,
                                *trace_, base::MonotonicClock::Get(), peers_.get());
  store->set_interrupt([s = session.get()] { return s->stopping(); });
  absl::MutexLock lock(&session_mu_);
  // The old ones (after an eviction: Rejoin closed that session, so it calls its link no more) go
  // first: the link's threads, which read the session's timings, then the session, then the store.
  coordinator_.reset();
  session_.reset();
  store_.reset();
  coordinator_ = std::move(coordinator);
  store_ = std::move(store);
  session_ = std::move(session);
  if (stopped_) session_->Stop();
  return absl::OkStatus();
}

bool JobClient::RejoinDue(const absl::Status& status) const {
  // Evicted: told so by the coordinator, or refused by a store before it heard. A failed job
  // evicts everyone with its reason; nothing to rejoin then.
  const bool evicted =
      (absl::IsAborted(status) && (absl::StartsWith(status.message(), "evicted:") ||
                                   absl::StrContains(status.message(), "refused to resume"))) ||
      (absl::IsFailedPrecondition(status) &&
       (absl::StrContains(status.message(), "has left or was evicted") ||
        absl::StrContains(status.message(), "is stale")));
  return evicted && !stopped_ && rejoins_ < options_.max_rejoins &&
         !absl::StrContains(status.message(), "the job failed");
}

absl::Status JobClient::Rejoin(const absl::Status& evicted) {
  if (!RejoinDue(evicted)) return evicted;
  ++rejoins_;
  trainer_metrics_->rejoins.Increment();
  steps_before_ += session_->steps();
  spdlog::warn("{}; rejoining the job under a new incarnation (rejoin {} of at most {})",
               std::string(evicted.message()), rejoins_, options_.max_rejoins);
  session_->Close("evicted");
  store_->set_interrupt(nullptr);
  if (absl::Status joined = Connect(); !joined.ok()) {
    // The job ended meanwhile: nothing to rejoin, and nothing wrong (Step says it is over).
    if (absl::IsOutOfRange(joined)) return joined;
    // Still an eviction (ABORTED), with why the rejoin failed.
    return absl::AbortedError(
        absl::StrCat(evicted.message(), "; the rejoin failed: ", joined.message()));
  }
  {
    absl::MutexLock lock(&session_mu_);
    if (paused_) session_->SetPaused(true);
  }
  RETURN_IF_ERROR(session_->Start());
  const v1::Welcome& welcome = session_->welcome();
  spdlog::info("rejoined the {} job as id {} (incarnation {}) at clock {}", welcome.mode(),
               welcome.trainer_id(), welcome.incarnation(), welcome.start_clock());
  return absl::OkStatus();
}

absl::Status JobClient::Start() {
  absl::Status started = session_->Start();
  while (!started.ok() && RejoinDue(started)) started = Rejoin(started);
  return started;
}

void JobClient::SetPaused(bool paused) {
  absl::MutexLock lock(&session_mu_);
  paused_ = paused;
  session_->SetPaused(paused);
}

absl::StatusOr<bool> JobClient::Step(float loss) {
  absl::StatusOr<bool> more = session_->Step(loss);
  while (!more.ok() && RejoinDue(more.status())) {
    absl::Status rejoined = Rejoin(more.status());
    if (rejoined.ok()) return true;                  // the job's model is loaded: step on
    if (absl::IsOutOfRange(rejoined)) return false;  // the job is over
    more = rejoined;
  }
  return more;
}

void JobClient::Stop() {
  stopped_ = true;
  absl::MutexLock lock(&session_mu_);
  if (session_) session_->Stop();
}

JobClient::~JobClient() {
  if (session_) session_->Close();
  if (store_) store_->set_interrupt(nullptr);  // it asks the session, which goes first
}

}  // namespace syncopate::client
