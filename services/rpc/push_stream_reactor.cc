#include "rpc/push_stream_reactor.h"

#include <utility>

#include "absl/time/clock.h"
#include "rpc/chunk_frames.h"

namespace syncopate::rpc {

namespace {

constexpr int kHeaderField = v1::PushMessage::kHeaderFieldNumber;
constexpr int kChunkField = v1::PushMessage::kChunkFieldNumber;

}  // namespace

PushStreamReactor::PushStreamReactor(SpecLookup lookup, Begin begin, Take take,
                                     PushReactor::Pace pace, StreamWatchdog* watchdog,
                                     grpc::CallbackServerContext* context)
    : lookup_(std::move(lookup)),
      begin_(std::move(begin)),
      take_(std::move(take)),
      paced_(std::move(pace)),
      watched_(watchdog, context) {
  watched_.SetBusy(false);  // until its first push
  StartRead(&request_);
}

void PushStreamReactor::OnReadDone(bool ok) {
  if (!ok) {  // the sender closed the stream, or it broke: a push cut short is dropped
    push_.reset();
    Finish(grpc::Status::OK);
    return;
  }
  watched_.Touch();
  absl::StatusOr<int> kind = OneofMember(request_, "push stream message", kHeaderField, kEndField);
  if (!kind.ok()) return End(kind.status());
  if (*kind == kEndField) {
    request_.Clear();
    if (!push_) return End(absl::InvalidArgumentError("a push's end came before its header"));
    absl::StatusOr<grpc::ByteBuffer> reply = take_(push_->Finish(), start_);
    push_.reset();
    if (!reply.ok()) return End(reply.status());
    reply_ = *std::move(reply);
    StartWrite(&reply_);
    return;
  }
  if (*kind != kHeaderField && *kind != kChunkField) {
    return End(absl::InvalidArgumentError(
        "a push's messages are its header, its chunks and its end, nothing else"));
  }
  if (!push_) {
    push_.emplace(lookup_);
    start_ = absl::Now();
    watched_.SetBusy(true);
  }
  const bool header = push_->header() == nullptr;
  const uint64_t before = push_->payload_bytes();
  absl::Status added = push_->Add(request_);
  request_.Clear();  // a chunk's payload holds its own references to the slices
  if (!added.ok()) return End(added);
  if (header) {
    if (absl::Status allowed = begin_(*push_->header()); !allowed.ok()) return End(allowed);
  }
  paced_.After(push_->payload_bytes() - before, watched_, [this] { StartRead(&request_); });
}

void PushStreamReactor::OnWriteDone(bool ok) {
  reply_.Clear();
  if (!ok) {  // the sender went away
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the push stream's sender went away"));
    return;
  }
  watched_.Touch();
  // A stopping server (StreamWatchdog::Drain) cancels the stream now: the read fails. Said before
  // the read starts: once it has, another thread may end the stream and delete this reactor.
  watched_.SetBusy(false);
  StartRead(&request_);
}

void PushStreamReactor::End(const absl::Status& status) {
  push_.reset();
  Finish(ToGrpcStatus(status));
}

void PushStreamReactor::OnCancel() { paced_.Cancel(); }

void PushStreamReactor::OnDone() { delete this; }

}  // namespace syncopate::rpc
