#include "client/session_client.h"

#include "absl/strings/str_cat.h"
#include "rpc/grpc_util.h"

namespace syncopate::client {

absl::StatusOr<std::unique_ptr<SessionClient>> SessionClient::Connect(const std::string& address,
                                                                      const v1::Join& join,
                                                                      absl::Duration timeout) {
  std::unique_ptr<SessionClient> client(new SessionClient());
  client->channel_ = rpc::MakeChannel(address);
  if (!client->channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::UnavailableError(absl::StrCat("cannot reach the coordinator at ", address));
  }
  client->stub_ = v1::Coordinator::NewStub(client->channel_);
  client->stream_ = client->stub_->Session(&client->ctx_);
  v1::SessionRequest request;
  *request.mutable_join() = join;
  if (!client->stream_->Write(request)) {
    return absl::UnavailableError("coordinator closed the session on join");
  }
  client->reader_ = std::thread([c = client.get()] { c->ReadLoop(); });
  // The first directive must be the Welcome.
  absl::MutexLock lock(&client->mu_);
  auto ready = [c = client.get()]() ABSL_SHARED_LOCKS_REQUIRED(c->mu_) {
    return !c->directives_.empty() || c->stream_done_;
  };
  if (!client->mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    client->ctx_.TryCancel();
    return absl::DeadlineExceededError("no Welcome from the coordinator");
  }
  if (client->directives_.empty() || !client->directives_.front().has_welcome()) {
    client->ctx_.TryCancel();
    return absl::UnavailableError("coordinator refused the join (see its log)");
  }
  client->welcome_ = client->directives_.front().welcome();
  client->directives_.pop_front();
  return client;
}

SessionClient::~SessionClient() {
  Close();
  if (reader_.joinable()) reader_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
}

void SessionClient::ReadLoop() {
  v1::Directive directive;
  while (stream_->Read(&directive)) {
    absl::MutexLock lock(&mu_);
    if (directive.has_peer_left() || directive.has_stop_sending()) {
      if (on_peer_directive_) on_peer_directive_(directive);
      continue;
    }
    directives_.push_back(directive);
  }
  absl::MutexLock lock(&mu_);
  stream_done_ = true;
}

void SessionClient::OnPeerDirective(std::function<void(const v1::Directive&)> callback) {
  absl::MutexLock lock(&mu_);
  on_peer_directive_ = std::move(callback);
}

absl::StatusOr<v1::Proceed> SessionClient::WaitProceed(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]()
                   ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !directives_.empty() || stream_done_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError("no directive yet");
  }
  if (directives_.empty()) return absl::UnavailableError("session stream to coordinator closed");
  v1::Directive d = std::move(directives_.front());
  directives_.pop_front();
  if (d.has_evicted()) return absl::AbortedError("evicted: " + d.evicted().reason());
  if (d.has_done()) return absl::OutOfRangeError("training is done: " + d.done().reason());
  if (!d.has_proceed()) return absl::InternalError("unexpected directive");
  return d.proceed();
}

absl::Status SessionClient::Write(const v1::SessionRequest& request) {
  absl::MutexLock lock(&write_mu_);
  if (closed_) return absl::UnavailableError("session closed");
  if (!stream_->Write(request)) return absl::UnavailableError("session stream broken");
  return absl::OkStatus();
}

absl::Status SessionClient::ReportClock(const v1::ClockReport& report) {
  v1::SessionRequest request;
  *request.mutable_clock() = report;
  return Write(request);
}

void SessionClient::StartHeartbeats(std::function<v1::TrainerTimings()> timings) {
  const absl::Duration interval = absl::Seconds(welcome_.heartbeat_interval_seconds());
  heartbeat_ = std::thread([this, interval, timings = std::move(timings)] {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
        if (mu_.AwaitWithTimeout(absl::Condition(&stop), interval)) return;
      }
      v1::SessionRequest request;
      *request.mutable_heartbeat()->mutable_timings() = timings();
      if (!Write(request).ok()) return;
    }
  });
}

void SessionClient::Leave(const std::string& reason) {
  v1::SessionRequest request;
  request.mutable_leave()->set_reason(reason);
  Write(request).IgnoreError();
  Close();
}

void SessionClient::Close() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  {
    absl::MutexLock lock(&write_mu_);
    if (closed_) return;
    closed_ = true;
    if (!stream_) return;  // Connect failed before the stream opened
    stream_->WritesDone();
  }
  // Give the coordinator a moment to end the stream itself, then cut it.
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stream_done_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(2))) ctx_.TryCancel();
}

}  // namespace syncopate::client
