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

// A reactor's next read, started at once or after an emulated link's pace: reading slower holds
// the sender back through TCP flow control. The pause is the server's own, not the client's
// quiet, so the stream is touched as it ends. A read always follows the alarm, so the alarm is
// done before the reactor's OnDone.
class PacedRead {
 public:
  // How long to wait before reading on after a message that carried `payload` bytes.
  using Pace = std::function<absl::Duration(size_t payload)>;

  // `pace` may be null (read at once).
  explicit PacedRead(Pace pace) : pace_(std::move(pace)) {}
  // Calls `read` (which starts the reactor's read) now, or once the pace of `payload` bytes ran.
  void After(size_t payload, WatchedStream& watched, std::function<void()> read);
  // A read waiting on the alarm starts at once (and fails: the call is cancelled). For OnCancel.
  void Cancel() { alarm_.Cancel(); }

 private:
  const Pace pace_;
  grpc::Alarm alarm_;
};

// Messages go into a PushAssembler as they arrive. When the stream ends, or at the first message
// the assembler refuses, `take` gets the assembled push or the refusal, and the status it returns
// ends the call; with OK, `take` has written the reply (rpc::EncodeMessage) into `response`, the
// method's. Deletes itself when gRPC is done with it.
class PushReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  using Take = std::function<grpc::Status(absl::StatusOr<StagedPush>, grpc::ByteBuffer* response)>;
  using Pace = PacedRead::Pace;

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
  PacedRead paced_;
  grpc::ByteBuffer message_;
  rpc::WatchedStream watched_;
};

// A push stream refused before any message is read (the caller may not push).
using RefusedPush = rpc::Refused<grpc::ServerReadReactor<grpc::ByteBuffer>>;

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_PUSH_REACTOR_H_
