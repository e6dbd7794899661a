#include "coordinator/session_service.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "rpc/grpc_util.h"

namespace syncopate::coordinator {
namespace {

// One trainer's session. Reads run one at a time on gRPC's threads and call into the coordinator
// with no lock of this reactor held; writes are started by whichever thread finds the outbox
// non-empty and no write in flight (the coordinator's, through the outbox listener, or gRPC's
// after a write completes). Lock order: outbox listener, then mu_, then the outbox's queue.
class SessionReactor final : public grpc::ServerBidiReactor<v1::SessionRequest, v1::Directive> {
 public:
  // `caller`: the trainer's certificate identity (none without TLS). With a `watchdog`, a stream
  // that sends no Join for its idle time is cancelled (once joined, a silent trainer is evicted).
  SessionReactor(Coordinator& coordinator, const rpc::Authorizer& authorizer,
                 std::optional<rpc::Identity> caller, rpc::StreamWatchdog* watchdog,
                 grpc::ServerContextBase* context)
      : coordinator_(coordinator),
        authorizer_(authorizer),
        caller_(std::move(caller)),
        watched_(watchdog, context) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      EndReads(/*left=*/false);
      return;
    }
    if (!key_) {
      Join();
      return;
    }
    switch (request_.kind_case()) {
      case v1::SessionRequest::kClock:
        coordinator_.Report(*key_, request_.clock());
        break;
      case v1::SessionRequest::kHeartbeat:
        coordinator_.Heartbeat(*key_, request_.heartbeat());
        break;
      case v1::SessionRequest::kLeave: {
        const v1::Leave& leave = request_.leave();
        coordinator_.Leave(*key_, leave.reason(),
                           leave.has_final_test_accuracy()
                               ? std::optional<double>(leave.final_test_accuracy())
                               : std::nullopt,
                           leave.has_test_accuracy()
                               ? std::optional<Evaluation>(
                                     {leave.test_accuracy(), leave.test_accuracy_age_seconds()})
                               : std::nullopt);
        EndReads(/*left=*/true);
        return;
      }
      default:
        break;  // a second Join or an empty message: ignored
    }
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) write_failed_ = true;  // the stream broke: the reads end too
    WriteNextLocked();
  }

  void OnDone() override {
    // After this the outbox no longer calls into this reactor (SetListener waits for a running
    // listener), so it may go.
    if (outbox_) outbox_->SetListener(nullptr);
    delete this;
  }

 private:
  void Join() {
    if (!request_.has_join()) {
      FinishOnce(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session must start with Join"));
      return;
    }
    if (absl::Status allowed = authorizer_.RequireName(
            caller_, request_.join().name(), "Session",
            absl::StrCat("a join as ", rpc::Quoted(request_.join().name())));
        !allowed.ok()) {
      FinishOnce(rpc::ToGrpcStatus(allowed));
      return;
    }
    auto outbox = std::make_shared<Outbox>();
    absl::StatusOr<SessionKey> key = coordinator_.Join(request_.join(), outbox);
    if (!key.ok()) {
      FinishOnce(rpc::ToGrpcStatus(key.status()));
      return;
    }
    key_ = *key;
    watched_.Stop();  // the coordinator's eviction timeout watches it now
    outbox_ = outbox;
    outbox_->SetListener([this] {
      absl::MutexLock lock(&mu_);
      WriteNextLocked();
    });
    {
      absl::MutexLock lock(&mu_);
      WriteNextLocked();  // what was queued before the listener was set
    }
    StartRead(&request_);
  }

  // No more reads: the trainer left, or its half of the stream ended. A session that ends
  // without Leave is a departure the coordinator must hear of at once.
  void EndReads(bool left) {
    if (!key_) {
      FinishOnce(grpc::Status::OK);  // it went before joining
      return;
    }
    if (!left) coordinator_.Disconnected(*key_);
    {
      absl::MutexLock lock(&mu_);
      reads_done_ = true;
    }
    outbox_->Close();  // its listener writes what is left, then finishes
  }

  // Starts the next write, or finishes once nothing is left to write and nothing to read.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (!write_failed_ && outbox_->TryPop(&directive_)) {
      writing_ = true;
      StartWrite(&directive_);
      return;
    }
    if (reads_done_ && (write_failed_ || outbox_->closed())) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  void FinishOnce(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  Coordinator& coordinator_;
  const rpc::Authorizer& authorizer_;
  const std::optional<rpc::Identity> caller_;
  rpc::WatchedStream watched_;      // until the trainer joined
  v1::SessionRequest request_;      // touched only by the read in flight
  std::optional<SessionKey> key_;   // set by the first read, before any other
  std::shared_ptr<Outbox> outbox_;  // likewise

  absl::Mutex mu_;
  v1::Directive directive_ ABSL_GUARDED_BY(mu_);  // the write in flight
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// A session refused before its first read (the caller is not a trainer).
using RefusedSession = rpc::Refused<grpc::ServerBidiReactor<v1::SessionRequest, v1::Directive>>;

}  // namespace

grpc::ServerBidiReactor<v1::SessionRequest, v1::Directive>* SessionService::Session(
    grpc::CallbackServerContext* ctx) {
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Session", {rpc::Role::kTrainer});
  if (!caller.ok()) return new RefusedSession(rpc::ToGrpcStatus(caller.status()));
  return new SessionReactor(coordinator_, authorizer_, *std::move(caller), watchdog_, ctx);
}

grpc::ServerUnaryReactor* SessionService::GetStatus(grpc::CallbackServerContext* ctx,
                                                    const v1::GetStatusRequest*,
                                                    v1::ClusterStatus* reply) {
  if (auto caller = authorizer_.Require(*ctx, "GetStatus", rpc::kAnyRole); !caller.ok()) {
    return rpc::Answer(ctx, rpc::ToGrpcStatus(caller.status()));
  }
  *reply = coordinator_.Status();
  return rpc::Answer(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SessionService::Finish(grpc::CallbackServerContext* ctx,
                                                 const v1::FinishRequest* request,
                                                 v1::FinishResponse* reply) {
  if (auto caller = authorizer_.Require(*ctx, "Finish", {rpc::Role::kOperator}); !caller.ok()) {
    return rpc::Answer(ctx, rpc::ToGrpcStatus(caller.status()));
  }
  absl::StatusOr<int64_t> final_round = coordinator_.Finish(
      request->reason().empty() ? "an operator ended training" : request->reason());
  if (!final_round.ok()) return rpc::Answer(ctx, rpc::ToGrpcStatus(final_round.status()));
  reply->set_final_round(*final_round);
  return rpc::Answer(ctx, grpc::Status::OK);
}

}  // namespace syncopate::coordinator
