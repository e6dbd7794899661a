#include "client/session_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "rpc/grpc_util.h"
#include "spdlog/spdlog.h"

namespace syncopate::client {
namespace {

// The longest one attempt to open a stream may take while resuming.
constexpr absl::Duration kResumeAttempt = absl::Seconds(2);
// How long Leave waits for the coordinator to end the stream on it, unless a resume is under way.
constexpr absl::Duration kLeaveGrace = absl::Seconds(2);
// How often a finished Leave's wait asks SessionClientOptions::interrupted.
constexpr absl::Duration kInterruptPoll = absl::Milliseconds(200);

}  // namespace

absl::StatusOr<std::unique_ptr<SessionClient>> SessionClient::Connect(
    const std::string& address, const v1::Join& join, SessionClientOptions options) {
  std::unique_ptr<SessionClient> client(new SessionClient(options));
  client->address_ = address;
  client->join_ = join;
  client->join_.clear_resume();
  client->channel_ =
      rpc::MakeChannel(address, client->options_.credentials, rpc::Role::kCoordinator);
  client->stub_ = v1::Coordinator::NewStub(client->channel_);
  const absl::Time deadline = absl::Now() + options.join_timeout;
  base::Backoff backoff(options.backoff);
  while (true) {
    absl::StatusOr<std::unique_ptr<Call>> call =
        client->Open(client->join_, deadline - absl::Now(), &client->welcome_);
    if (call.ok()) {
      absl::MutexLock lock(&client->write_mu_);
      client->call_ = *std::move(call);
      break;
    }
    if (!absl::IsUnavailable(call.status())) return call.status();
    if (absl::Now() + backoff.Next() >= deadline) {
      return absl::UnavailableError(
          absl::StrCat("cannot join the coordinator at ", address, " within ",
                       absl::FormatDuration(options.join_timeout), ": ", call.status().message()));
    }
    absl::SleepFor(std::min(backoff.Next(), deadline - absl::Now()));
  }
  {
    absl::MutexLock lock(&client->mu_);
    client->clock_ = client->welcome_.start_clock();
    client->awaiting_grant_ = true;
  }
  client->reader_ = std::thread([c = client.get()] { c->ReadLoop(); });
  return client;
}

SessionClient::~SessionClient() {
  Close();
  if (reader_.joinable()) reader_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
}

absl::StatusOr<std::unique_ptr<SessionClient::Call>> SessionClient::Open(const v1::Join& join,
                                                                         absl::Duration timeout,
                                                                         v1::Welcome* welcome) {
  if (timeout <= absl::ZeroDuration() ||
      !channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::UnavailableError(absl::StrCat("cannot reach the coordinator at ", address_));
  }
  auto call = std::make_unique<Call>();
  call->stream = stub_->Session(&call->ctx);
  v1::SessionRequest request;
  *request.mutable_join() = join;
  v1::Directive first;
  bool answered = false;
  if (call->stream->Write(request)) {
    // The stream lives on after the Welcome, so its context has no deadline: a watchdog cuts a
    // coordinator that does not answer in time.
    absl::Notification read;
    std::thread watchdog([&] {
      if (!read.WaitForNotificationWithTimeout(timeout)) call->ctx.TryCancel();
    });
    answered = call->stream->Read(&first);
    read.Notify();
    watchdog.join();
  }
  if (answered && first.has_welcome()) {
    *welcome = first.welcome();
    return call;
  }
  if (answered) {
    call->ctx.TryCancel();
    call->stream->Finish();
    return absl::InternalError("the coordinator's first directive is not a Welcome");
  }
  // The stream is over: its status is the coordinator's answer to the join.
  const absl::Status status = rpc::FromGrpcStatus(call->stream->Finish());
  if (status.ok() || absl::IsCancelled(status) || absl::IsDeadlineExceeded(status)) {
    return absl::UnavailableError("the coordinator closed the session before its Welcome");
  }
  return status;
}

void SessionClient::ReadLoop() {
  while (true) {
    Stream* stream;
    {
      absl::MutexLock lock(&write_mu_);
      stream = call_->stream.get();
    }
    v1::Directive directive;
    while (stream->Read(&directive)) {
      heard_.fetch_add(1);
      if (directive.has_heartbeat_ack()) continue;  // counted: the coordinator is alive
      absl::MutexLock lock(&mu_);
      if (directive.has_peer_left() || directive.has_stop_sending()) {
        if (on_peer_directive_) on_peer_directive_(directive);
        continue;
      }
      if (directive.has_evicted() || directive.has_done()) final_directive_ = true;
      directives_.push_back(directive);
    }
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || final_directive_) {
        stream_done_ = true;
        return;
      }
    }
    // The coordinator ends the stream with OK once it has the Leave; any other end is a break.
    bool left;
    {
      absl::MutexLock lock(&write_mu_);
      broken_ = true;
      left = call_->stream->Finish().ok() && leave_.has_value();
    }
    if (left) {
      absl::MutexLock lock(&mu_);
      stream_done_ = true;
      return;
    }
    absl::Status resumed = Resume();
    absl::MutexLock lock(&mu_);
    if (!resumed.ok()) {
      if (!stopping_) lost_ = resumed;
      stream_done_ = true;
      return;
    }
  }
}

absl::Status SessionClient::Resume() {
  {
    // Not taken yet: the coordinator that resumes the session decides again.
    absl::MutexLock lock(&mu_);
    directives_.clear();
  }
  const absl::Time began = absl::Now();
  const absl::Time give_up = began + options_.resume_for;
  spdlog::warn("the session with the coordinator at {} broke; resuming it (for up to {})", address_,
               absl::FormatDuration(options_.resume_for));
  base::Backoff backoff(options_.backoff);
  while (true) {
    absl::Status attempt;
    {
      absl::MutexLock lock(&write_mu_);
      if (closed_) return absl::CancelledError("the session is closing");
      v1::Join join = join_;
      v1::Resume* resume = join.mutable_resume();
      resume->set_trainer_id(welcome_.trainer_id());
      resume->set_incarnation(welcome_.incarnation());
      {
        absl::MutexLock state(&mu_);
        resume->set_clock(clock_);
        resume->set_awaiting_grant(awaiting_grant_);
      }
      v1::Welcome welcome;
      absl::StatusOr<std::unique_ptr<Call>> call =
          Open(join, std::min(kResumeAttempt, give_up - absl::Now()), &welcome);
      if (call.ok() && (welcome.trainer_id() != welcome_.trainer_id() ||
                        welcome.incarnation() != welcome_.incarnation())) {
        return absl::InternalError("the coordinator resumed the session under another identity");
      }
      if (call.ok()) {
        call_ = *std::move(call);
        broken_ = false;
        // A Leave the broken stream may not have carried: the coordinator ends this one on it.
        if (leave_) call_->stream->Write(*leave_);
        spdlog::info("the session with the coordinator resumed after {} and {} failed attempts",
                     absl::FormatDuration(absl::Trunc(absl::Now() - began, absl::Milliseconds(1))),
                     backoff.failures());
        return absl::OkStatus();
      }
      attempt = call.status();
    }
    if (absl::IsFailedPrecondition(attempt)) {
      return absl::AbortedError(
          absl::StrCat("the coordinator refused to resume the session: ", attempt.message()));
    }
    if (!absl::IsUnavailable(attempt)) return attempt;
    const absl::Duration delay = backoff.Next();
    if (absl::Now() + delay >= give_up) {
      return absl::UnavailableError(absl::StrCat(
          "could not resume the session with the coordinator at ", address_, " within ",
          absl::FormatDuration(options_.resume_for), ": ", attempt.message()));
    }
    absl::MutexLock lock(&mu_);
    auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stop), delay)) {
      return absl::CancelledError("the session is closing");
    }
  }
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
  if (directives_.empty()) {
    if (lost_) return *lost_;
    return absl::UnavailableError("session stream to coordinator closed");
  }
  v1::Directive d = std::move(directives_.front());
  directives_.pop_front();
  if (d.has_evicted()) return absl::AbortedError("evicted: " + d.evicted().reason());
  if (d.has_done()) return absl::OutOfRangeError("training is done: " + d.done().reason());
  if (!d.has_proceed()) return absl::InternalError("unexpected directive");
  clock_ = d.proceed().clock();
  awaiting_grant_ = false;
  return d.proceed();
}

absl::Status SessionClient::Write(const v1::SessionRequest& request) {
  absl::MutexLock lock(&write_mu_);
  if (closed_) return absl::UnavailableError("session closed");
  // A write into a broken stream is dropped: the resumed session carries the clock, and the next
  // heartbeat the timings. Nothing follows a Leave.
  if (!broken_ && !leave_) call_->stream->Write(request);
  return absl::OkStatus();
}

absl::Status SessionClient::ReportClock(const v1::ClockReport& report) {
  v1::SessionRequest request;
  *request.mutable_clock() = report;
  // The clock moves and the report is written in one step under write_mu_, which a resume holds
  // while it reads the clock: the report reaches the coordinator either in the resume or on the
  // resumed stream, never both (a report the resume already carried would be a second report of
  // that clock, and the coordinator evicts a trainer for it).
  absl::MutexLock lock(&write_mu_);
  {
    absl::MutexLock state(&mu_);
    clock_ = report.clock();
    awaiting_grant_ = true;
  }
  if (closed_) return absl::UnavailableError("session closed");
  if (!broken_ && !leave_) call_->stream->Write(request);
  return absl::OkStatus();
}

void SessionClient::StartHeartbeats(std::function<v1::TrainerTimings()> timings) {
  const absl::Duration interval = absl::Seconds(welcome_.heartbeat_interval_seconds());
  {
    absl::MutexLock lock(&mu_);
    timings_ = std::move(timings);
  }
  heartbeat_ = std::thread([this, interval] {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || stream_done_; };
        if (mu_.AwaitWithTimeout(absl::Condition(&stop), interval)) return;
      }
      if (!Write(HeartbeatRequest()).ok()) return;
    }
  });
}

v1::SessionRequest SessionClient::HeartbeatRequest() {
  std::function<v1::TrainerTimings()> timings;
  v1::SessionRequest request;
  {
    absl::MutexLock lock(&mu_);
    timings = timings_;
    request.mutable_heartbeat()->set_awaiting_grant(awaiting_grant_);
    request.mutable_heartbeat()->set_paused(paused_);
  }
  if (timings) *request.mutable_heartbeat()->mutable_timings() = timings();
  return request;
}

void SessionClient::SetPaused(bool paused) {
  {
    absl::MutexLock lock(&mu_);
    if (paused_ == paused) return;
    paused_ = paused;
    if (!timings_) return;  // not joined yet: the first heartbeat carries it
  }
  // At once: a pause that begins just before the progress timeout must not wait for a heartbeat.
  (void)Write(HeartbeatRequest());
}

void SessionClient::Leave(const v1::Leave& leave, bool finished) {
  v1::SessionRequest request;
  *request.mutable_leave() = leave;
  {
    absl::MutexLock lock(&write_mu_);
    if (closed_ || leave_ || !call_) return;  // the first Leave closes the session
    leave_ = request;
    if (!broken_) call_->stream->Write(request);
  }
  // The coordinator ends the stream once it has the Leave. A stream that broke before it got there
  // is resumed, and the Leave sent on the new one: a trainer that finished the job waits for that
  // (bounded by options_.resume_for), so that a coordinator restart does not lose the Leave (its
  // state "done", the final accuracy it carries); any other waits kLeaveGrace.
  const absl::Time deadline = absl::Now() + (finished ? options_.resume_for : kLeaveGrace);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stream_done_; };
  const bool interruptible = finished && options_.interrupted;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Duration left = deadline - absl::Now();
      if (stream_done_ || left <= absl::ZeroDuration()) break;
      const absl::Duration slice = interruptible ? std::min(left, kInterruptPoll) : left;
      if (mu_.AwaitWithTimeout(absl::Condition(&done), slice)) break;
    }
    // Asked without the lock: the caller's check may wait for its own locks (Python's GIL).
    if (interruptible && options_.interrupted()) {
      spdlog::warn("interrupted while the Leave waited for the coordinator: leaving without it");
      break;
    }
  }
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
    if (!call_) return;  // Connect failed before a stream opened
    if (!broken_) call_->stream->WritesDone();
  }
  // Give the coordinator a moment to end the stream itself, then cut it.
  bool ended;
  {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stream_done_; };
    ended = mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(2));
  }
  if (!ended) {
    absl::MutexLock lock(&write_mu_);
    call_->ctx.TryCancel();
  }
}

}  // namespace syncopate::client
