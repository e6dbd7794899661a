#include "client/job_client.h"

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

  v1::Join join;
  join.set_name(options.name);
  join.set_peer_address(job->peers_->address());
  join.set_rank(options.rank);
  join.set_slowdown(options.session.slowdown);
  SessionClientOptions session_options;
  session_options.join_timeout = options.join_timeout;
  session_options.credentials = options.credentials;
  session_options.interrupted = options.leave_interrupted;
  ASSIGN_OR_RETURN(job->coordinator_,
                   SessionClient::Connect(options.coordinator, join, session_options));
  const v1::Welcome& welcome = job->coordinator_->welcome();
  RETURN_IF_ERROR(base::WriteReadyFile(options.ready_file, {0, job->metrics_port(), 0}));
  job->coordinator_->OnPeerDirective(
      [node = job->peers_.get()](const v1::Directive& d) { node->HandleDirective(d); });
  // The link limits hold for all of the trainer's traffic: store pushes and pulls too.
  job->store_ = std::make_unique<StoreClient>(
      std::vector<std::string>(welcome.store_addresses().begin(), welcome.store_addresses().end()),
      options.credentials, options.rpc_timeout, tensor::kDefaultChunkBytes, job->peers_->limits());
  job->store_->set_metrics(job->trainer_metrics_.get());
  job->trace_ = std::make_unique<TraceWriter>(options.trace_file);
  job->session_ = std::make_unique<Session>(
      std::move(options.session), *job->coordinator_, *job->store_, parameters,
      *job->trainer_metrics_, *job->trace_, base::MonotonicClock::Get(), &job->peers_->link());
  job->store_->set_interrupt([session = job->session_.get()] { return session->stopping(); });
  return job;
}

JobClient::~JobClient() {
  if (session_) session_->Close();
  if (store_) store_->set_interrupt(nullptr);  // it asks the session, which goes first
}

}  // namespace syncopate::client
