#include "store/transfer_reactor.h"

#include <utility>

#include "absl/time/clock.h"
#include "rpc/chunk_frames.h"
#include "syncopate/v1/store.grpc.pb.h"

namespace syncopate::store {

namespace {

constexpr int kPush = v1::TransferRequest::kPushFieldNumber;
constexpr int kChunk = v1::TransferRequest::kChunkFieldNumber;
constexpr int kPushEnd = v1::TransferRequest::kPushEndFieldNumber;
constexpr int kPull = v1::TransferRequest::kPullFieldNumber;

grpc::ByteBuffer Reply(v1::TransferReply reply) { return rpc::EncodeMessage(reply); }

}  // namespace

TransferReactor::TransferReactor(TransferCalls calls, prometheus::Gauge& open,
                                 rpc::StreamWatchdog* watchdog,
                                 grpc::CallbackServerContext* context)
    : calls_(std::move(calls)), open_(open), watchdog_(watchdog), context_(context) {
  if (watchdog_ != nullptr) {
    watched_ = watchdog_->Watch([context = context_] { context->TryCancel(); });
    watchdog_->SetBusy(*watched_, false);  // until its first operation
  }
  StartRead(&request_);
}

void TransferReactor::OnReadDone(bool ok) {
  if (!ok) {
    // The trainer closed the stream, or it broke: a push cut short is dropped unapplied.
    EndOperation();
    Unwatch();
    Finish(grpc::Status::OK);
    return;
  }
  absl::StatusOr<int> kind = rpc::OneofMember(request_, "transfer request", kPush, kPull);
  if (!kind.ok()) return End(kind.status());
  if (state_ == State::kIdle) {
    if (*kind == kPush) {
      BeginOperation();
      push_.emplace(calls_.lookup);
      state_ = State::kPushing;
    } else if (*kind == kPull) {
      BeginOperation();
      return BeginPull();
    } else {
      return End(
          absl::InvalidArgumentError("a transfer begins with a push's header or a pull request"));
    }
  }
  Touch();
  if (*kind == kPushEnd) {
    absl::StatusOr<v1::PushReply> taken = calls_.take_push(push_->Finish(), start_);
    push_.reset();
    if (!taken.ok()) return End(taken.status());
    v1::TransferReply reply;
    *reply.mutable_pushed() = *std::move(taken);
    reply_ = Reply(std::move(reply));
    state_ = State::kReplying;
    StartWrite(&reply_);
    return;
  }
  if (*kind != kPush && *kind != kChunk) {
    return End(absl::InvalidArgumentError(
        "a push's messages are its header, its chunks and its end, nothing else"));
  }
  const bool header = push_->header() == nullptr;
  absl::Status added = push_->Add(request_);
  request_.Clear();  // a chunk's payload holds its own references to the slices
  if (!added.ok()) return End(added);
  if (header) {
    if (absl::Status allowed = calls_.may_push(push_->header()->trainer_id()); !allowed.ok()) {
      return End(allowed);
    }
  }
  StartRead(&request_);
}

void TransferReactor::BeginPull() {
  v1::TransferRequest request;
  grpc::ByteBuffer bytes = request_;  // shares the slices; Deserialize consumes its argument
  if (!grpc::SerializationTraits<v1::TransferRequest>::Deserialize(&bytes, &request).ok()) {
    return End(absl::InvalidArgumentError("unparsable pull request"));
  }
  request_.Clear();
  chunk_bytes_ = request.pull().chunk_bytes();
  state_ = State::kWaitingForRound;
  calls_.start_pull(request.pull(), this,
                    [this](SnapshotOr snapshot) { Serve(std::move(snapshot)); });
}

void TransferReactor::Serve(SnapshotOr snapshot) {
  if (!snapshot.ok()) return End(snapshot.status());
  Touch();  // the wait is over; the operation's quiet counts from here
  frames_.emplace(*std::move(snapshot), chunk_bytes_);
  state_ = State::kPulling;
  WriteNextFrame();
}

void TransferReactor::WriteNextFrame() {
  if (frames_->Next(&reply_)) {
    StartWrite(&reply_);
    return;
  }
  calls_.pulled(frames_->bytes(), start_);
  frames_.reset();
  v1::TransferReply end;
  end.mutable_pull_end();
  reply_ = Reply(std::move(end));
  state_ = State::kEndingPull;
  StartWrite(&reply_);
}

void TransferReactor::OnWriteDone(bool ok) {
  if (!ok) {  // the trainer went away
    EndOperation();
    Unwatch();
    Finish(calls_.finish(absl::CancelledError("the transfer stream's reader went away")));
    return;
  }
  Touch();
  if (state_ == State::kPulling) return WriteNextFrame();
  Idle();  // the push's reply, or the pull's end, is written
}

void TransferReactor::Idle() {
  EndOperation();
  reply_.Clear();
  state_ = State::kIdle;
  // A stopping store (StreamWatchdog::Drain) cancels the stream now: the read fails. Said before
  // the read starts: once it has, another thread may end the stream.
  if (watched_) watchdog_->SetBusy(*watched_, false);
  StartRead(&request_);
}

void TransferReactor::End(const absl::Status& status) {
  EndOperation();
  Unwatch();
  push_.reset();
  Finish(calls_.finish(status));
}

void TransferReactor::OnCancel() {
  // Only a pull waiting for its round is ended here: anything else has a read or a write
  // outstanding, which fails and ends the stream. A cancel that comes while the pull is on its
  // way to the waiters finds nothing to withdraw: that pull waits out its round or its max wait,
  // then its first write fails.
  if (calls_.withdraw_pull(this)) {
    End(absl::CancelledError("the puller went away while it waited"));
  }
}

void TransferReactor::OnDone() {
  EndOperation();
  Unwatch();
  delete this;
}

void TransferReactor::BeginOperation() {
  start_ = absl::Now();
  busy_ = true;
  open_.Increment();
  if (watched_) watchdog_->SetBusy(*watched_, true);
}

void TransferReactor::Touch() {
  if (watched_) watchdog_->Touch(*watched_);
}

void TransferReactor::EndOperation() {
  if (!busy_) return;
  busy_ = false;
  open_.Decrement();
}

void TransferReactor::Unwatch() {
  if (watched_) watchdog_->Forget(*std::exchange(watched_, std::nullopt));
}

}  // namespace syncopate::store
