#include "coordinator/outbox.h"

namespace syncopate::coordinator {

void Outbox::Send(v1::Directive directive) {
  absl::MutexLock lock(&mu_);
  if (!closed_) queue_.push_back(std::move(directive));
}

void Outbox::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

bool Outbox::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

bool Outbox::Pop(v1::Directive* directive, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !queue_.empty() || closed_; };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (queue_.empty()) return false;
  *directive = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

}  // namespace syncopate::coordinator
