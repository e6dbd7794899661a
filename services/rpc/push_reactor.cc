#include "rpc/push_reactor.h"

#include "absl/time/clock.h"

namespace syncopate::rpc {

PushReactor::PushReactor(SpecLookup lookup, Take take, grpc::ByteBuffer* response,
                         prometheus::Gauge* open, Pace pace, rpc::StreamWatchdog* watchdog,
                         grpc::ServerContextBase* context)
    : assembler_(std::move(lookup)),
      take_(std::move(take)),
      response_(response),
      open_(open),
      pace_(std::move(pace)),
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
  const size_t payload = assembler_.payload_bytes() - before;
  const absl::Duration wait = pace_ ? pace_(payload) : absl::ZeroDuration();
  if (wait <= absl::ZeroDuration()) {
    StartRead(&message_);
    return;
  }
  // The pause is this server's own (an emulated link's pace), not the client's quiet.
  alarm_.Set(absl::ToChronoTime(absl::Now() + wait), [this](bool) {
    watched_.Touch();
    StartRead(&message_);
  });
}

void PushReactor::OnCancel() { alarm_.Cancel(); }

void PushReactor::OnDone() {
  if (open_) open_->Decrement();
  delete this;
}

}  // namespace syncopate::rpc
