#include "rpc/stream_watchdog.h"

#include <algorithm>
#include <utility>

namespace syncopate::rpc {

StreamWatchdog::StreamWatchdog(absl::Duration idle, const base::Clock& clock,
                               std::function<void()> on_cancel)
    : idle_(idle), clock_(clock), on_cancel_(std::move(on_cancel)) {}

StreamWatchdog::~StreamWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
}

bool StreamWatchdog::Enabled() const {
  return idle_ > absl::ZeroDuration() && idle_ != absl::InfiniteDuration();
}

void StreamWatchdog::Start() {
  if (!Enabled() || sweeper_.joinable()) return;
  const absl::Duration every = std::clamp(idle_ / 4, absl::Milliseconds(10), absl::Seconds(1));
  sweeper_ = std::thread([this, every] {
    while (true) {
      {
        // Wakes at once when stopping; otherwise after `every` of real time (this thread only
        // paces the sweeps; CancelIdle judges by clock_).
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), every)) return;
      }
      CancelIdle();
    }
  });
}

StreamWatchdog::Id StreamWatchdog::Watch(std::function<void()> cancel) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  streams_.emplace(id, Stream{std::move(cancel), clock_.Now()});
  return id;
}

void StreamWatchdog::Touch(Id id) {
  absl::MutexLock lock(&mu_);
  if (auto it = streams_.find(id); it != streams_.end()) it->second.last_active = clock_.Now();
}

void StreamWatchdog::SetBusy(Id id, bool busy) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  it->second.busy = busy;
  if (draining_ && !busy) CancelOnce(it->second);
}

void StreamWatchdog::CancelOnce(Stream& stream) {
  if (stream.cancelled) return;
  stream.cancelled = true;
  stream.cancel();
}

int StreamWatchdog::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  int cancelled = 0;
  for (auto& [id, stream] : streams_) {
    if (stream.busy || stream.cancelled) continue;
    CancelOnce(stream);
    ++cancelled;
  }
  return cancelled;
}

void StreamWatchdog::Forget(Id id) {
  absl::MutexLock lock(&mu_);
  streams_.erase(id);
}

int StreamWatchdog::CancelIdle() {
  if (!Enabled()) return 0;
  int cancelled = 0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    for (auto& [id, stream] : streams_) {
      if (stream.cancelled || now - stream.last_active < idle_) continue;
      CancelOnce(stream);
      ++cancelled;
    }
  }
  for (int i = 0; on_cancel_ && i < cancelled; ++i) on_cancel_();
  return cancelled;
}

WatchedStream::WatchedStream(StreamWatchdog* watchdog, grpc::ServerContextBase* context)
    : watchdog_(watchdog),
      id_(watchdog_ ? watchdog_->Watch([context] { context->TryCancel(); }) : 0) {}

WatchedStream::~WatchedStream() {
  if (watchdog_) watchdog_->Forget(id_);
}

void WatchedStream::Touch() {
  if (watchdog_) watchdog_->Touch(id_);
}

void WatchedStream::SetBusy(bool busy) {
  if (watchdog_) watchdog_->SetBusy(id_, busy);
}

void WatchedStream::Stop() {
  if (watchdog_) watchdog_->Forget(id_);
  watchdog_ = nullptr;
}

}  // namespace syncopate::rpc
