// One trainer's long-lived Transfer stream to a store shard (docs/transport.md): its pushes and
// pulls, one after another, each with the rules of a Push or a Pull call, without a call per
// transfer. A refused operation ends the stream with the refusal's status, as the call would
// have ended; the trainer opens another for its next operation.
#ifndef SYNCOPATE_STORE_TRANSFER_REACTOR_H_
#define SYNCOPATE_STORE_TRANSFER_REACTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/gauge.h"
#include "rpc/push_assembler.h"
#include "rpc/stream_watchdog.h"
#include "store/parameter_table.h"
#include "store/pull_frames.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::store {

using SnapshotOr = absl::StatusOr<std::shared_ptr<const ModelSnapshot>>;

// What a Transfer stream asks of its shard (StoreService answers).
struct TransferCalls {
  // The shard's shape of a tensor, for a push's header.
  rpc::SpecLookup lookup;
  // Whether the caller may push as `trainer_id`: asked as a push's header arrives, before any of
  // its chunks is taken in.
  std::function<absl::Status(uint64_t trainer_id)> may_push;
  // Takes a whole push (or the assembler's refusal of it), started at `start`: its reply, or the
  // refusal that ends the stream. Authorizes the push's trainer id.
  std::function<absl::StatusOr<v1::PushReply>(absl::StatusOr<rpc::StagedPush>, absl::Time start)>
      take_push;
  // Hands `serve` the snapshot `request` names: now, on this thread, or, for a round not closed
  // yet, later, on the thread that closes it or gives up waiting, unless `withdraw_pull(ticket)`
  // takes the wait back first.
  std::function<void(const v1::PullRequest& request, const void* ticket,
                     std::function<void(SnapshotOr)> serve)>
      start_pull;
  // False when the pull `ticket` is not waiting (being served, or never parked).
  std::function<bool(const void* ticket)> withdraw_pull;
  // A pull started at `start` sent its last message: `bytes` of payload.
  std::function<void(uint64_t bytes, absl::Time start)> pulled;
  // The status that ends the stream for `status` (counted when it is a refusal).
  std::function<grpc::Status(const absl::Status& status)> finish;
};

// Reads and writes alternate: a read is outstanding while the stream is idle or a push arrives,
// a write while a reply or a pull goes out. Deletes itself when gRPC is done with it.
class TransferReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // With a `watchdog`, a stream that neither reads nor writes a message for its idle time is
  // cancelled, between operations too: a trainer held at a barrier for longer opens a new stream
  // at its next transfer. When the watchdog drains (the store stops), the stream is cancelled
  // between two operations: an operation under way ends first.
  // `open` counts the operations under way (as a Push or Pull stream would count).
  TransferReactor(TransferCalls calls, prometheus::Gauge& open, rpc::StreamWatchdog* watchdog,
                  grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  enum class State { kIdle, kPushing, kReplying, kWaitingForRound, kPulling, kEndingPull };

  // Starts the pull `request_` asks for.
  void BeginPull();
  // Serves the pull under way from `snapshot` (or ends the stream with its error).
  void Serve(SnapshotOr snapshot);
  void WriteNextFrame();
  // The operation is over: reads the next one.
  void Idle();
  // Ends the stream with `status` (an operation's refusal).
  void End(const absl::Status& status);
  // An operation starts (counted in `open`) or is over.
  void BeginOperation();
  void EndOperation();
  void Touch();
  void Unwatch();

  const TransferCalls calls_;
  prometheus::Gauge& open_;
  rpc::StreamWatchdog* const watchdog_;  // null: never cancelled for quiet
  grpc::CallbackServerContext* const context_;
  bool busy_ = false;                               // an operation is under way
  std::optional<rpc::StreamWatchdog::Id> watched_;  // from construction to the end

  State state_ = State::kIdle;
  grpc::ByteBuffer request_;  // the message being read
  grpc::ByteBuffer reply_;    // the message being written
  absl::Time start_;          // of the operation under way
  std::optional<rpc::PushAssembler> push_;
  uint32_t chunk_bytes_ = 0;
  std::optional<PullFrames> frames_;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_TRANSFER_REACTOR_H_
