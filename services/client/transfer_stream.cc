#include "client/transfer_stream.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/alarm.h"
#include "rpc/chunk_frames.h"

namespace syncopate::client {

namespace {

constexpr int kPullHeader = v1::TransferReply::kPullHeaderFieldNumber;
constexpr int kChunk = v1::TransferReply::kChunkFieldNumber;
constexpr int kPullEnd = v1::TransferReply::kPullEndFieldNumber;

}  // namespace

void TransferCancel::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool TransferCancel::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void TransferCancel::Attach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  context_ = context;
  if (context_ != nullptr && cancelled_) context_->TryCancel();
}

// Cancels the stream's call when an operation outlives its timeout; disarmed when destroyed. The
// alarm's callback holds the call's context, so a late one never touches a freed one.
class TransferStream::Deadline {
 public:
  Deadline(std::shared_ptr<grpc::ClientContext> context, absl::Duration timeout)
      : timeout_(timeout), passed_(std::make_shared<std::atomic<bool>>(false)) {
    alarm_.Set(absl::ToChronoTime(absl::Now() + timeout),
               [context = std::move(context), passed = passed_](bool fired) {
                 if (!fired) return;  // disarmed
                 passed->store(true);
                 context->TryCancel();
               });
  }
  ~Deadline() { alarm_.Cancel(); }

  bool passed() const { return passed_->load(); }
  absl::Duration timeout() const { return timeout_; }

 private:
  const absl::Duration timeout_;
  std::shared_ptr<std::atomic<bool>> passed_;
  grpc::Alarm alarm_;
};

TransferStream::TransferStream(std::shared_ptr<grpc::Channel> channel, const char* method,
                               std::string label)
    : label_(std::move(label)), method_(method, std::move(channel)) {}

TransferStream::~TransferStream() {
  if (stream_ == nullptr) return;
  context_->TryCancel();
  stream_->Finish();
}

absl::Status TransferStream::Run(
    absl::string_view what, absl::Duration timeout, TransferCancel* cancel,
    const std::function<std::optional<absl::Status>(bool*)>& operation) {
  const absl::Time deadline = absl::Now() + timeout;
  for (int attempt = 0;; ++attempt) {
    const bool reused = stream_ != nullptr;
    if (!reused) {
      context_ = std::make_shared<grpc::ClientContext>();
      // The stream's headers go with its first message: opening it does not wait for the server.
      context_->set_initial_metadata_corked(true);
      stream_ = method_.Start(context_.get());
    }
    const Deadline alarm(context_, std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (cancel != nullptr) cancel->Attach(context_.get());
    bool delivered = false;
    std::optional<absl::Status> outcome = operation(&delivered);
    if (cancel != nullptr) {
      cancel->Attach(nullptr);                // before the context may go
      if (cancel->cancelled() && !outcome) {  // the stream broke as the cancel cut it
        outcome = absl::CancelledError(absl::StrCat("the ", what, " was cancelled"));
      }
    }
    if (outcome && outcome->ok()) return absl::OkStatus();
    const absl::Status ended = End(what, alarm, outcome.value_or(absl::OkStatus()));
    // A stream that was open before this operation may have ended while idle (the server
    // restarted, or cancelled it as quiet): once, the operation goes again on a new stream. A
    // push sent twice is taken once (its sequence, or its round at a peer), a pull changes
    // nothing, unless it already handed part of a model to its caller.
    if (!outcome && reused && !delivered && attempt == 0 && absl::IsUnavailable(ended) &&
        absl::Now() < deadline) {
      continue;
    }
    return ended;
  }
}

absl::Status TransferStream::End(absl::string_view what, const Deadline& deadline,
                                 const absl::Status& local) {
  // A stream this side stops must be cancelled: the server still waits for the rest.
  if (!local.ok()) context_->TryCancel();
  const grpc::Status ended = stream_->Finish();
  stream_.reset();
  context_.reset();
  if (!local.ok()) return absl::Status(local.code(), absl::StrCat(label_, ": ", local.message()));
  const bool cancelled = ended.error_code() == grpc::StatusCode::CANCELLED;
  if (cancelled && deadline.passed()) {
    return absl::DeadlineExceededError(absl::StrCat(label_, ": the ", what,
                                                    " took longer than its deadline of ",
                                                    absl::FormatDuration(deadline.timeout())));
  }
  // Cancelled without this side asking (a stopping server ends its streams so, and so does its
  // watchdog a quiet one), or ended without an error mid-operation: the server went away, and
  // the caller retries.
  if (ended.ok() || cancelled) {
    return absl::UnavailableError(absl::StrCat(
        label_, " ended the transfer stream: ", ended.ok() ? "no reply" : ended.error_message()));
  }
  const absl::Status s = rpc::FromGrpcStatus(ended);
  return absl::Status(s.code(), absl::StrCat(label_, ": ", s.message()));
}

absl::Status TransferStream::Push(const grpc::ByteBuffer& header, const WriteChunks& write_chunks,
                                  const grpc::ByteBuffer& end, absl::Duration timeout,
                                  const std::function<absl::Status(grpc::ByteBuffer&)>& take_reply,
                                  const PushOptions& options) {
  grpc::WriteOptions header_options;
  if (options.cork_header) header_options.set_buffer_hint();
  int attempts = 0;
  return Run("push", timeout, options.cancel, [&](bool*) -> std::optional<absl::Status> {
    if (options.sent_again != nullptr) *options.sent_again = ++attempts > 1;
    if (options.header_sent != nullptr) *options.header_sent = false;
    if (!stream_->Write(header, header_options)) return std::nullopt;
    if (options.header_sent != nullptr) *options.header_sent = true;
    std::optional<absl::Status> written = write_chunks(*stream_);
    if (!written) return std::nullopt;
    if (!written->ok()) return written;
    if (!stream_->Write(end)) return std::nullopt;
    grpc::ByteBuffer message;
    if (!stream_->Read(&message)) return std::nullopt;
    return take_reply(message);
  });
}

absl::Status TransferStream::Pull(
    const v1::PullRequest& request, absl::Duration timeout,
    const std::function<absl::Status(const grpc::ByteBuffer&)>& take) {
  v1::TransferRequest pull;
  *pull.mutable_pull() = request;
  // The store answers a round it is still closing a little before this side gives up.
  const int64_t wait_ms = absl::ToInt64Milliseconds(timeout - absl::Milliseconds(500));
  pull.mutable_pull()->set_max_wait_ms(
      static_cast<uint32_t>(std::clamp<int64_t>(wait_ms, 1, 1 << 30)));
  const grpc::ByteBuffer encoded = rpc::EncodeMessage(pull);
  return Run("pull", timeout, nullptr, [&](bool* delivered) -> std::optional<absl::Status> {
    if (!stream_->Write(encoded)) return std::nullopt;
    grpc::ByteBuffer message;
    while (stream_->Read(&message)) {
      absl::StatusOr<int> kind = rpc::OneofMember(message, "transfer reply", kPullHeader, kPullEnd);
      if (!kind.ok()) return kind.status();
      if (*kind == kPullEnd) return absl::OkStatus();
      if (*kind != kPullHeader && *kind != kChunk) {
        return absl::DataLossError("the store answered a pull with something else than a model");
      }
      *delivered = true;
      if (absl::Status taken = take(message); !taken.ok()) return taken;
    }
    return std::nullopt;
  });
}

}  // namespace syncopate::client
