#include "client/session.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace syncopate::client {

Session::Session(SessionOptions options, CoordinatorLink& coordinator, StoreLink& store,
                 Parameters& parameters, TrainerMetrics& metrics, TraceWriter& trace,
                 const base::Clock& clock, PeerLink* peers)
    : options_(std::move(options)),
      coordinator_(coordinator),
      model_(parameters),
      protocol_(options_, coordinator, store, metrics, trace, clock, peers),
      clock_(clock),
      strategy_(
          MakeStepStrategy({options_, model_, protocol_, clock_, [this] { return stopping(); },
                            [this] { return StepLimitReached(); }})) {}

Session::~Session() { Close(); }

bool Session::stopping() const {
  return stop_requested_.load() || (options_.interrupted && options_.interrupted());
}

absl::Status Session::Start() {
  if (started_) return absl::FailedPreconditionError("the session has already started");
  started_ = true;
  absl::StatusOr<bool> begun = [&]() -> absl::StatusOr<bool> {
    const v1::Welcome& welcome = protocol_.welcome();
    if (welcome.codec() != v1::CODEC_NONE) {
      const tensor::Compression compression{welcome.codec(), welcome.topk_ratio()};
      RETURN_IF_ERROR(tensor::CheckCompression(compression));
      RETURN_IF_ERROR(tensor::CheckCompressionForMode(compression, welcome.peer_to_peer()));
      // Store modes push compressed deltas (error feedback); the peer link sends whole models in
      // the codec (Protocol::Begin tells it).
      if (!welcome.peer_to_peer()) model_.Compress(compression);
    }
    RETURN_IF_ERROR(model_.Begin());
    tensor::TensorMap initial;
    RETURN_IF_ERROR(model_.Read(&initial));
    RETURN_IF_ERROR(protocol_.Begin(initial));
    ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed,
                     protocol_.AwaitProceed([this] { return stopping(); }));
    if (!proceed) return false;
    RETURN_IF_ERROR(strategy_->Begin(*proceed));
    return true;
  }();
  step_began_ = clock_.Now();
  if (!begun.ok()) return End(begun.status(), "").status();
  if (!*begun) (void)End(absl::OkStatus(), EndReason(protocol_));
  return absl::OkStatus();
}

absl::StatusOr<bool> Session::Step(float loss) {
  if (!started_) return absl::FailedPreconditionError("Step before Start");
  if (ended_) {
    if (!ended_->ok()) return *ended_;
    return false;
  }
  // The caller's step, stretched to the emulated accelerator step and the straggler's slowdown.
  const absl::Duration real = clock_.Now() - step_began_;
  const absl::Duration emulated = std::max(real, options_.step_time) * options_.slowdown - real;
  if (emulated > absl::ZeroDuration()) clock_.SleepFor(emulated);
  protocol_.AddCompute(real, std::max(emulated, absl::ZeroDuration()));
  model_.CountStep();
  ++steps_;
  std::optional<Ending> ending = strategy_->Step(loss);
  step_began_ = clock_.Now();
  if (ending) return End(std::move(ending->status), std::move(ending->reason));
  return true;
}

absl::StatusOr<bool> Session::End(absl::Status status, std::string reason) {
  strategy_->Halt();
  if (IsGivenUpForStop(status)) {
    spdlog::info("stopping: {}", std::string(status.message()));
    status = absl::OkStatus();
    reason = "shutdown";
  }
  ended_ = status;
  if (!status.ok()) {
    // Leave at once, so that the job does not wait for this trainer until it is evicted.
    spdlog::warn("leaving after {} steps on an error: {}", steps_.load(), status.ToString());
    protocol_.Leave("error: " + std::string(status.message()));
    return status;
  }
  spdlog::info("leaving after {} steps: {}", steps_.load(), reason);
  // A final accuracy the caller owes, or the accuracy of an evaluation it was asked for and may
  // still run (a library trainer evaluating in the background), goes with the Leave, at Close.
  // Meanwhile the trainer counts as paused, so it is not evicted for making no progress.
  if (protocol_.final_accuracy_due() || protocol_.evaluation_due()) {
    deferred_leave_ = reason;
    coordinator_.SetPaused(true);
  } else {
    LeaveCleanly(reason, std::nullopt);
  }
  return false;
}

void Session::Close(const std::string& reason, std::optional<double> final_accuracy) {
  strategy_->Halt();
  // Left already, or ended by an error; unless the Leave waits for this Close.
  if (ended_ && !deferred_leave_) return;
  ended_ = absl::OkStatus();
  LeaveCleanly(std::exchange(deferred_leave_, std::nullopt).value_or(reason), final_accuracy);
}

void Session::LeaveCleanly(const std::string& reason, std::optional<double> final_accuracy) {
  if (std::optional<tensor::SharedTensorMap> residual = model_.TakeResidual()) {
    protocol_.PushResidual(*std::move(residual));
  }
  protocol_.ResendWhatRestartsLost();
  protocol_.Leave(reason, final_accuracy);
}

}  // namespace syncopate::client
