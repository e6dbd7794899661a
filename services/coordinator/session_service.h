// The gRPC face of the coordinator: one Session stream per trainer (messages in become Coordinator
// events; the trainer's Outbox is written back), GetStatus and Finish. Served with gRPC's callback
// API: a session holds no thread while it waits, so the threads do not grow with the trainers.
#ifndef SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_
#define SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_

#include "coordinator/coordinator.h"
#include "rpc/authorizer.h"
#include "rpc/stream_watchdog.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace syncopate::coordinator {

// Thread-safe; `coordinator` must outlive the service. `authorizer` allows Session only to
// trainers, each joining under its certificate's name (or any name with a pool certificate),
// GetStatus to any process of the job, and Finish to operators (docs/security.md).
class SessionService final : public v1::Coordinator::CallbackService {
 public:
  // With a `watchdog` (outliving the server), a session that sends no Join for its idle time is
  // cancelled.
  SessionService(Coordinator& coordinator, rpc::Authorizer authorizer,
                 rpc::StreamWatchdog* watchdog = nullptr)
      : coordinator_(coordinator), authorizer_(std::move(authorizer)), watchdog_(watchdog) {}

  // The first message must be a Join (else INVALID_ARGUMENT); a refused join (by the authorizer:
  // PERMISSION_DENIED, nothing changed) ends the stream with the coordinator's status. Directives
  // are written as the coordinator queues them. The stream ends OK once the trainer left (or its
  // stream broke) and its outbox is closed and written.
  grpc::ServerBidiReactor<v1::SessionRequest, v1::Directive>* Session(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::GetStatusRequest* request,
                                      v1::ClusterStatus* reply) override;
  // Coordinator::Finish, with its errors as they are.
  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx,
                                   const v1::FinishRequest* request,
                                   v1::FinishResponse* reply) override;

 private:
  Coordinator& coordinator_;
  const rpc::Authorizer authorizer_;
  rpc::StreamWatchdog* const watchdog_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_
