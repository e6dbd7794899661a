// A client stream of PushMessages (the store's Initialize and Push, a trainer's peer Exchange)
// served with gRPC's callback API: no thread waits on it between messages. The messages are read
// raw (grpc::ByteBuffer) and decoded without copying their payload (rpc/chunk_frames.h).
#ifndef SYNCOPATE_RPC_PUSH_REACTOR_H_
#define SYNCOPATE_RPC_PUSH_REACTOR_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/gauge.h"
#include "rpc/grpc_util.h"
#include "rpc/push_assembler.h"
#include "rpc/stream_watchdog.h"

namespace syncopate::rpc {

// Messages go into a PushAssembler as they arrive. When the stream ends, or at the first message
// the assembler refuses, `take` gets the assembled push or the refusal, and the status it returns
// ends the call; with OK, `take` has written the reply (rpc::EncodeMessage) into `response`, the
// method's. Deletes itself when gRPC is done with it.
class PushReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  using Take = std::function<grpc::Status(absl::StatusOr<StagedPush>, grpc::ByteBuffer* response)>;
  // How long to wait before reading on after a message that carried `payload` bytes: an emulated
  // link's pace (reading slower holds the sender back through TCP flow control).
  using Pace = std::function<absl::Duration(size_t payload)>;

  // `open` (may be null) counts the streams open; `pace` may be null (read at once). With a
  // `watchdog`, the stream is cancelled when no message arrives for its idle time (`context` is
  // the call's).
  PushReactor(SpecLookup lookup, Take take, grpc::ByteBuffer* response, prometheus::Gauge* open,
              Pace pace = nullptr, rpc::StreamWatchdog* watchdog = nullptr,
              grpc::ServerContextBase* context = nullptr);

  void OnReadDone(bool ok) override;
  // A paced read waiting on the alarm starts at once (and fails: the call is cancelled).
  void OnCancel() override;
  void OnDone() override;

 private:
  PushAssembler assembler_;
  Take take_;
  grpc::ByteBuffer* response_;
  prometheus::Gauge* open_;
  Pace pace_;
  grpc::ByteBuffer message_;
  grpc::Alarm alarm_;  // the paced next read; a read always follows, so it is done before OnDone
  rpc::WatchedStream watched_;
};

// A push stream refused before any message is read (the caller may not push).
using RefusedPush = rpc::Refused<grpc::ServerReadReactor<grpc::ByteBuffer>>;

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_PUSH_REACTOR_H_
