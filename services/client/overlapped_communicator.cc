#include "client/overlapped_communicator.h"

#include "base/status_macros.h"

namespace syncopate::client {

OverlappedCommunicator::OverlappedCommunicator(Protocol& protocol, int64_t clock,
                                               std::function<bool()> stopping)
    : protocol_(protocol), stopping_(std::move(stopping)), clock_(clock) {
  thread_ = std::thread([this] { Run(); });
}

OverlappedCommunicator::~OverlappedCommunicator() { Halt(); }

void OverlappedCommunicator::Halt() {
  halt_ = true;
  {
    absl::MutexLock lock(&mu_);  // wakes the thread's wait for a delta
  }
  if (thread_.joinable()) thread_.join();
}

bool OverlappedCommunicator::idle() const {
  absl::MutexLock lock(&mu_);
  return idle_ && !ended_;
}

int64_t OverlappedCommunicator::next_clock() const {
  absl::MutexLock lock(&mu_);
  return clock_ + 1;
}

void OverlappedCommunicator::Send(tensor::SharedTensorMap delta, float loss) {
  absl::MutexLock lock(&mu_);
  idle_ = false;
  outgoing_ = Outgoing{std::move(delta), loss};
}

std::optional<OverlappedCommunicator::Pulled> OverlappedCommunicator::TakePulled() {
  absl::MutexLock lock(&mu_);
  std::optional<Pulled> pulled = std::move(pulled_);
  pulled_.reset();
  return pulled;
}

std::optional<absl::Status> OverlappedCommunicator::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

bool OverlappedCommunicator::AwaitIdleOrEnded(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](OverlappedCommunicator* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                       c->mu_) { return c->idle_ || c->ended_.has_value(); },
                                  this),
                              timeout);
}

void OverlappedCommunicator::Run() {
  absl::Status status;
  while (true) {
    Outgoing out;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](OverlappedCommunicator* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
            return c->outgoing_.has_value() || c->halt_.load();
          },
          this));
      if (halt_) break;
      out = std::move(*outgoing_);
      outgoing_.reset();
    }
    absl::StatusOr<bool> again = Cycle(out);
    status = again.status();
    if (!again.ok() || !*again) break;
  }
  absl::MutexLock lock(&mu_);
  ended_ = status;
}

absl::StatusOr<bool> OverlappedCommunicator::Cycle(const Outgoing& out) {
  const int64_t clock = next_clock();
  RETURN_IF_ERROR(protocol_.Push(out.delta, clock));
  RETURN_IF_ERROR(protocol_.Report(clock, out.loss));
  ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed,
                   protocol_.AwaitProceed([this] { return halt_.load() || stopping_(); }));
  if (!proceed) return false;  // training is done, or stopping
  ASSIGN_OR_RETURN(std::optional<PulledModel> model, protocol_.Pull(*proceed));
  absl::MutexLock lock(&mu_);
  clock_ = proceed->clock();
  if (model) {
    pulled_ = Pulled{*std::move(model),
                     proceed->pull().has_round() ? proceed->pull().includes_clock() : -1};
  }
  idle_ = true;
  return true;
}

}  // namespace syncopate::client
