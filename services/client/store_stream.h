// A trainer's long-lived Transfer stream to one store shard (docs/transport.md): its pushes and
// pulls to that shard, one after another, without a call each.
#ifndef SYNCOPATE_CLIENT_STORE_STREAM_H_
#define SYNCOPATE_CLIENT_STORE_STREAM_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "rpc/grpc_util.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::client {

// Thread-compatible: one operation at a time.
//
// The stream opens with the first operation, and again with the next one after an operation
// failed: a failed operation ends the stream, as the store ends it for a refusal, and returns the
// status a Push or Pull call would have (UNAVAILABLE when the store went away, so that the caller
// retries). Each operation has a deadline, the stream's opening included; past it the stream is
// cancelled and the operation is DEADLINE_EXCEEDED. An operation whose stream, open before it,
// turns out broken (the store restarted in between, or cancelled the stream as quiet) goes again,
// once, on a new stream, within the same deadline.
class StoreStream {
 public:
  using Writer = grpc::internal::WriterInterface<grpc::ByteBuffer>;

  // `address` names the shard in errors.
  StoreStream(std::shared_ptr<grpc::Channel> channel, std::string address);
  // Cancels the stream.
  ~StoreStream();
  StoreStream(const StoreStream&) = delete;
  StoreStream& operator=(const StoreStream&) = delete;

  // One push: `header` (a PushMessage holding the header), the chunks `write_chunks` writes (it
  // returns false when a write failed; it may run twice, see above), then its end; the store's
  // reply in `reply`.
  absl::Status Push(const grpc::ByteBuffer& header,
                    const std::function<bool(Writer&)>& write_chunks, absl::Duration timeout,
                    v1::PushReply* reply);
  // One pull: every message of its reply up to its end (the header, the chunks) goes to `take`,
  // in order; an error from `take` cuts the pull, ends the stream, and is returned. A pull of a
  // round not closed yet waits for it at the store until a little before `timeout`, then is
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
  // failed (the stream broke, or the store ended it: End learns why), and sets `delivered` once
  // it handed something over.
  absl::Status Run(absl::string_view what, absl::Duration timeout,
                   const std::function<std::optional<absl::Status>(bool* delivered)>& operation);
  // Ends the stream after a failure: the status it ended with (`local` when this side cut it).
  absl::Status End(absl::string_view what, const Deadline& deadline, const absl::Status& local);

  const std::string address_;
  const rpc::RawBidiStream method_;
  std::shared_ptr<grpc::ClientContext> context_;  // shared with a deadline that may cancel it
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_STORE_STREAM_H_
