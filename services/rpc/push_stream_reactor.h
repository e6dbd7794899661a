// Many pushes, one after another, on one long-lived bidirectional stream (a trainer's peer
// Transfer): each is a header, its chunks and an end marker (field kEndField of the stream's
// oneof; the header and chunks have PushMessage's numbers), answered by one reply. Served with
// gRPC's callback API; the messages are read raw and decoded without copying their payload
// (rpc/chunk_frames.h).
#ifndef SYNCOPATE_RPC_PUSH_STREAM_REACTOR_H_
#define SYNCOPATE_RPC_PUSH_STREAM_REACTOR_H_

#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "rpc/push_assembler.h"
#include "rpc/push_reactor.h"
#include "rpc/stream_watchdog.h"

namespace syncopate::rpc {

// Each push goes into a PushAssembler as its messages arrive; `begin` is asked as its header
// arrives, before any chunk is taken in, and `take` gets it whole at its end marker. The first
// refusal (the assembler's, `begin`'s or `take`'s) ends the stream with its status; otherwise
// `take`'s reply is written and the next push is read. A push cut short (the sender went away)
// is dropped. Deletes itself when gRPC is done with it.
class PushStreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  static constexpr int kEndField = 3;

  using Begin = std::function<absl::Status(const v1::PushHeader& header)>;
  // The push (or the assembler's refusal of it) whose header arrived at `start`: the reply to
  // write (rpc::EncodeMessage), or the refusal that ends the stream.
  using Take =
      std::function<absl::StatusOr<grpc::ByteBuffer>(absl::StatusOr<StagedPush>, absl::Time start)>;

  // `pace` may be null (read at once). With a `watchdog`, the stream is cancelled when it neither
  // reads nor writes a message for its idle time, between pushes too, and between two pushes when
  // the watchdog drains (the server stops).
  PushStreamReactor(SpecLookup lookup, Begin begin, Take take, PushReactor::Pace pace,
                    StreamWatchdog* watchdog, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  // A paced read waiting on the alarm starts at once (and fails: the call is cancelled).
  void OnCancel() override;
  void OnDone() override;

 private:
  void End(const absl::Status& status);

  const SpecLookup lookup_;
  const Begin begin_;
  const Take take_;
  PacedRead paced_;
  std::optional<PushAssembler> push_;  // the push under way
  absl::Time start_;                   // of the push under way
  grpc::ByteBuffer request_;
  grpc::ByteBuffer reply_;
  WatchedStream watched_;
};

// A push stream refused before any message is read (the caller may not push).
using RefusedPushStream = Refused<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>;

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_PUSH_STREAM_REACTOR_H_
