#include "coordinator/outbox.h"

namespace syncopate::coordinator {

void Outbox::Send(v1::Directive directive) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    queue_.push_back(std::move(directive));
  }
  Notify();
}

void Outbox::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  Notify();
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

bool Outbox::TryPop(v1::Directive* directive) { return Pop(directive, absl::ZeroDuration()); }

void Outbox::SetListener(Listener listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

void Outbox::Notify() {
  absl::MutexLock lock(&listener_mu_);
  if (listener_) listener_();
}

}  // namespace syncopate::coordinator
