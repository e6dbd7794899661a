#include "coordinator/session_service.h"

#include <thread>

#include "rpc/grpc_util.h"

namespace syncopate::coordinator {

grpc::Status SessionService::Session(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<v1::Directive, v1::SessionRequest>* stream) {
  v1::SessionRequest request;
  if (!stream->Read(&request)) return grpc::Status::OK;
  if (!request.has_join()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session must start with Join");
  }
  auto outbox = std::make_shared<Outbox>();
  absl::StatusOr<SessionKey> key = coordinator_.Join(request.join(), outbox);
  if (!key.ok()) return rpc::ToGrpcStatus(key.status());

  // gRPC allows one reader and one writer at a time on a stream: this thread writes, the handler's
  // thread reads.
  std::thread writer([&] {
    v1::Directive directive;
    while (!ctx->IsCancelled()) {
      if (outbox->Pop(&directive, absl::Milliseconds(200))) {
        if (!stream->Write(directive)) break;
      } else if (outbox->closed()) {
        break;
      }
    }
  });
  bool left = false;
  while (!left && stream->Read(&request)) {
    switch (request.kind_case()) {
      case v1::SessionRequest::kClock:
        coordinator_.Report(*key, request.clock());
        break;
      case v1::SessionRequest::kHeartbeat:
        coordinator_.Heartbeat(*key, request.heartbeat());
        break;
      case v1::SessionRequest::kLeave:
        coordinator_.Leave(*key, request.leave().reason());
        left = true;
        break;
      default:
        break;  // a second Join or an empty message: ignored
    }
  }
  if (!left) coordinator_.Disconnected(*key);
  outbox->Close();
  writer.join();
  return grpc::Status::OK;
}

grpc::Status SessionService::GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                                       v1::ClusterStatus* reply) {
  *reply = coordinator_.Status();
  return grpc::Status::OK;
}

}  // namespace syncopate::coordinator
