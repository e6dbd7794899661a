#include "client/background_evaluator.h"

namespace syncopate::client {

BackgroundEvaluator::BackgroundEvaluator(Evaluate evaluate, Report report,
                                         std::function<absl::Time()> now)
    : evaluate_(std::move(evaluate)),
      report_(std::move(report)),
      now_(std::move(now)),
      thread_([this] { Run(); }) {}

BackgroundEvaluator::~BackgroundEvaluator() { Stop(); }

void BackgroundEvaluator::Submit(tensor::TensorMap model, absl::Time taken_at) {
  absl::MutexLock lock(&mu_);
  if (!stop_) waiting_ = Snapshot{std::move(model), taken_at};
}

bool BackgroundEvaluator::AwaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !waiting_ && !evaluating_; };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void BackgroundEvaluator::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    waiting_.reset();
  }
  if (thread_.joinable()) thread_.join();
}

void BackgroundEvaluator::Run() {
  while (true) {
    Snapshot snapshot;
    {
      absl::MutexLock lock(&mu_);
      // An idle worker's wait: Submit or Stop ends it.
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || waiting_; };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      snapshot = std::move(*waiting_);
      waiting_.reset();
      evaluating_ = true;
    }
    const absl::Time start = now_();
    const double accuracy = evaluate_(snapshot.model);
    report_(accuracy, snapshot.taken_at, now_() - start);
    absl::MutexLock lock(&mu_);
    evaluating_ = false;
  }
}

}  // namespace syncopate::client
