// A long-lived Transfer stream (docs/transport.md): a trainer's pushes and pulls to one store
// shard (ParameterStore.Transfer), or its models to one peer (Peer.Transfer), one after another,
// without a call each.
#ifndef SYNCOPATE_CLIENT_TRANSFER_STREAM_H_
#define SYNCOPATE_CLIENT_TRANSFER_STREAM_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/sync_stream.h"
#include "rpc/grpc_util.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::client {

// How a trainer's transfers travel: on long-lived streams (TransferStream), or a call each.
enum class Transport { kStream, kCall };

// Lets another thread cancel one transfer, before or while it runs. Thread-safe.
class TransferCancel {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class TransferStream;
  friend class PeerSender;
  void Attach(grpc::ClientContext* context);  // null: the transfer ended

  mutable absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// Thread-compatible: one operation at a time.
//
// The stream opens with the first operation, and again with the next one after an operation
// failed: a failed operation ends the stream, as the server ends it for a refusal, and returns the
// status the call (Push, Pull, Exchange) would have (UNAVAILABLE when the server went away, so
// that the caller retries). Each operation has a deadline, the stream's opening included; past it
// the stream is cancelled and the operation is DEADLINE_EXCEEDED. An operation whose stream, open
// before it, turns out broken (the server restarted, or cancelled the stream as quiet) goes again,
// once, on a new stream, within the same deadline.
class TransferStream {
 public:
  using Writer = grpc::internal::WriterInterface<grpc::ByteBuffer>;
  // Writes a push's chunks: OK when all were written; nullopt when a write failed (the stream
  // broke); another status when the writer stopped (the operation ends with it).
  using WriteChunks = std::function<std::optional<absl::Status>(Writer&)>;

  struct PushOptions {
    // The header may wait for the first chunk, so they leave together. Without it, the header's
    // write returns once the stream is set up (`header_sent`).
    bool cork_header = true;
    // Cancels the push: it ends CANCELLED (may be null).
    TransferCancel* cancel = nullptr;
    // Set to whether the last attempt's header was written (may be null): a push that failed
    // before it had failed at connection set-up, and nothing reached the server.
    bool* header_sent = nullptr;
    // Set to whether the push went again on a new stream (may be null): its stream, open before
    // it, broke under it, maybe after the server took it, so a refusal as a repeat means the
    // first one arrived.
    bool* sent_again = nullptr;
  };

  // `method`: the Transfer method ("/package.Service/Method", a string literal). `label` names
  // the server in errors ("store 10.0.0.3:7000").
  TransferStream(std::shared_ptr<grpc::Channel> channel, const char* method, std::string label);
  // Cancels the stream.
  ~TransferStream();
  TransferStream(const TransferStream&) = delete;
  TransferStream& operator=(const TransferStream&) = delete;

  // One push: `header` (a message holding the push's header), the chunks `write_chunks` writes
  // (it may run twice, see above), then `end` (the stream's end marker); the server's reply goes
  // to `take_reply`, whose error ends the stream and is returned.
  absl::Status Push(const grpc::ByteBuffer& header, const WriteChunks& write_chunks,
                    const grpc::ByteBuffer& end, absl::Duration timeout,
                    const std::function<absl::Status(grpc::ByteBuffer&)>& take_reply,
                    const PushOptions& options);
  // A store pull: every message of its reply up to its end (the header, the chunks) goes to
  // `take`, in order; an error from `take` cuts the pull, ends the stream, and is returned. A pull
  // of a round not closed yet waits for it at the store until a little before `timeout`, then is
  // UNAVAILABLE (retried), as a Pull call is.
  absl::Status Pull(const v1::PullRequest& request, absl::Duration timeout,
                    const std::function<absl::Status(const grpc::ByteBuffer&)>& take);

  // Whether a stream is open now (for tests).
  bool open() const { return stream_ != nullptr; }

 private:
  class Deadline;

  // Runs `operation` on the open stream, opening one first if none is; once more on a new stream
  // when a stream it did not open broke under it (UNAVAILABLE) before the operation handed
  // anything to its caller. `operation` returns its outcome, or nullopt when a read or write
  // failed (the stream broke, or the server ended it: End learns why), and sets `delivered` once
  // it handed something over. `cancel` (may be null) cancels it.
  absl::Status Run(absl::string_view what, absl::Duration timeout, TransferCancel* cancel,
                   const std::function<std::optional<absl::Status>(bool* delivered)>& operation);
  // Ends the stream after a failure: the status it ended with (`local` when this side cut it).
  absl::Status End(absl::string_view what, const Deadline& deadline, const absl::Status& local);

  const std::string label_;
  const rpc::RawBidiStream method_;
  std::shared_ptr<grpc::ClientContext> context_;  // shared with a deadline that may cancel it
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_TRANSFER_STREAM_H_
