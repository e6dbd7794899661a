// The gRPC face of the coordinator: one Session stream per trainer (messages in become Coordinator
// events; the trainer's Outbox is written back), and GetStatus.
#ifndef SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_
#define SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_

#include "coordinator/coordinator.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace syncopate::coordinator {

// Thread-safe; `coordinator` must outlive the service.
class SessionService final : public v1::Coordinator::Service {
 public:
  explicit SessionService(Coordinator& coordinator) : coordinator_(coordinator) {}

  grpc::Status Session(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::Directive, v1::SessionRequest>* stream) override;
  grpc::Status GetStatus(grpc::ServerContext* ctx, const v1::GetStatusRequest* request,
                         v1::ClusterStatus* reply) override;

 private:
  Coordinator& coordinator_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_SESSION_SERVICE_H_
