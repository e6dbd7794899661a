#include "rpc/push_reactor.h"

#include "absl/time/clock.h"

namespace syncopate::rpc {

void PacedRead::After(size_t payload, WatchedStream& watched, std::function<void()> read) {
  const absl::Duration wait = pace_ ? pace_(payload) : absl::ZeroDuration();
  if (wait <= absl::ZeroDuration()) {
    read();
    return;
  }
  alarm_.Set(absl::ToChronoTime(absl::Now() + wait), [&watched, read = std::move(read)](bool) {
    watched.Touch();
    read();
  });
}

PushReactor::PushReactor(SpecLookup lookup, Take take, grpc::ByteBuffer* response,
                         prometheus::Gauge* open, Pace pace, rpc::StreamWatchdog* watchdog,
                         grpc::ServerContextBase* context)
    : assembler_(std::move(lookup)),
      take_(std::move(take)),
      response_(response),
      open_(open),
      paced_(std::move(pace)),
      watched_(watchdog, context) {
  if (open_) open_->Increment();
  StartRead(&message_);
}

void PushReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client's half-close, or the stream broke (the assembler then sees it cut)
    Finish(take_(assembler_.Finish(), response_));
    return;
  }
  watched_.Touch();
  const uint64_t before = assembler_.payload_bytes();
  absl::Status added = assembler_.Add(message_);
  message_.Clear();  // the chunk's payload holds its own references to the slices
  if (!added.ok()) {
    Finish(take_(added, response_));
    return;
  }
  paced_.After(assembler_.payload_bytes() - before, watched_, [this] { StartRead(&message_); });
}

void PushReactor::OnCancel() { paced_.Cancel(); }

void PushReactor::OnDone() {
  if (open_) open_->Decrement();
  delete this;
}

}  // namespace syncopate::rpc
