#include "client/store_stream.h"

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

grpc::ByteBuffer PushEndMessage() {
  v1::TransferRequest end;
  end.mutable_push_end();
  return rpc::EncodeMessage(end);
}

}  // namespace

// Cancels the stream's call when an operation outlives its timeout; disarmed when destroyed. The
// alarm's callback holds the call's context, so a late one never touches a freed one.
class StoreStream::Deadline {
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

StoreStream::StoreStream(std::shared_ptr<grpc::Channel> channel, std::string address)
    : address_(std::move(address)), method_("/syncopate.v1.ParameterStore/Transfer", channel) {}

StoreStream::~StoreStream() {
  if (stream_ == nullptr) return;
  context_->TryCancel();
  stream_->Finish();
}

absl::Status StoreStream::Run(absl::string_view what, absl::Duration timeout,
                              const std::function<std::optional<absl::Status>(bool*)>& operation) {
  const absl::Time deadline = absl::Now() + timeout;
  for (int attempt = 0;; ++attempt) {
    const bool reused = stream_ != nullptr;
    if (!reused) {
      context_ = std::make_shared<grpc::ClientContext>();
      // The stream's headers go with its first message: opening it does not wait for the store.
      context_->set_initial_metadata_corked(true);
      stream_ = method_.Start(context_.get());
    }
    const Deadline alarm(context_, std::max(deadline - absl::Now(), absl::ZeroDuration()));
    bool delivered = false;
    const std::optional<absl::Status> outcome = operation(&delivered);
    if (outcome && outcome->ok()) return absl::OkStatus();
    const absl::Status ended = End(what, alarm, outcome.value_or(absl::OkStatus()));
    // A stream that was open before this operation may have ended while idle (the store
    // restarted, or cancelled it as quiet): once, the operation goes again on a new stream. A
    // push sent twice is taken once (its sequence), a pull changes nothing, unless it already
    // handed part of a model to its caller.
    if (!outcome && reused && !delivered && attempt == 0 && absl::IsUnavailable(ended) &&
        absl::Now() < deadline) {
      continue;
    }
    return ended;
  }
}

absl::Status StoreStream::End(absl::string_view what, const Deadline& deadline,
                              const absl::Status& local) {
  // A stream this side stops must be cancelled: the store still waits for the rest.
  if (!local.ok()) context_->TryCancel();
  const grpc::Status ended = stream_->Finish();
  stream_.reset();
  context_.reset();
  if (!local.ok()) {
    return absl::Status(local.code(), absl::StrCat("store ", address_, ": ", local.message()));
  }
  const bool cancelled = ended.error_code() == grpc::StatusCode::CANCELLED;
  if (cancelled && deadline.passed()) {
    return absl::DeadlineExceededError(absl::StrCat("store ", address_, ": the ", what,
                                                    " took longer than its deadline of ",
                                                    absl::FormatDuration(deadline.timeout())));
  }
  // Cancelled without this side asking (a stopping store ends its streams so, and so does its
  // watchdog a quiet one), or ended without an error mid-operation: the store went away, and the
  // caller retries.
  if (ended.ok() || cancelled) {
    return absl::UnavailableError(absl::StrCat("store ", address_, " ended the transfer stream: ",
                                               ended.ok() ? "no reply" : ended.error_message()));
  }
  const absl::Status s = rpc::FromGrpcStatus(ended);
  return absl::Status(s.code(), absl::StrCat("store ", address_, ": ", s.message()));
}

absl::Status StoreStream::Push(const grpc::ByteBuffer& header,
                               const std::function<bool(Writer&)>& write_chunks,
                               absl::Duration timeout, v1::PushReply* reply) {
  return Run("push", timeout, [&](bool*) -> std::optional<absl::Status> {
    // The header may wait for the first chunk: they leave together.
    if (!stream_->Write(header, grpc::WriteOptions().set_buffer_hint())) return std::nullopt;
    if (!write_chunks(*stream_) || !stream_->Write(PushEndMessage())) return std::nullopt;
    grpc::ByteBuffer message;
    if (!stream_->Read(&message)) return std::nullopt;
    v1::TransferReply parsed;
    if (!grpc::SerializationTraits<v1::TransferReply>::Deserialize(&message, &parsed).ok() ||
        parsed.kind_case() != v1::TransferReply::kPushed) {
      return absl::DataLossError("the store answered a push with something else than its reply");
    }
    *reply = std::move(*parsed.mutable_pushed());
    return absl::OkStatus();
  });
}

absl::Status StoreStream::Pull(const v1::PullRequest& request, absl::Duration timeout,
                               const std::function<absl::Status(const grpc::ByteBuffer&)>& take) {
  v1::TransferRequest pull;
  *pull.mutable_pull() = request;
  // The store answers a round it is still closing a little before this side gives up.
  const int64_t wait_ms = absl::ToInt64Milliseconds(timeout - absl::Milliseconds(500));
  pull.mutable_pull()->set_max_wait_ms(
      static_cast<uint32_t>(std::clamp<int64_t>(wait_ms, 1, 1 << 30)));
  const grpc::ByteBuffer encoded = rpc::EncodeMessage(pull);
  return Run("pull", timeout, [&](bool* delivered) -> std::optional<absl::Status> {
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
