#include "client/session.h"

#include <algorithm>

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
      clock_(clock) {}

Session::~Session() { Close(); }

bool Session::stopping() const {
  return stop_requested_.load() || (options_.interrupted && options_.interrupted());
}

absl::Status Session::Start() {
  if (started_) return absl::FailedPreconditionError("the session has already started");
  started_ = true;
  absl::StatusOr<bool> begun = [&]() -> absl::StatusOr<bool> {
    RETURN_IF_ERROR(model_.Begin());
    tensor::TensorMap initial;
    RETURN_IF_ERROR(model_.Read(&initial));
    RETURN_IF_ERROR(protocol_.Begin(initial));
    ASSIGN_OR_RETURN(std::optional<v1::Proceed> proceed,
                     protocol_.AwaitProceed([this] { return stopping(); }));
    if (!proceed) return false;
    RETURN_IF_ERROR(Apply(*proceed));
    clock_of_grant_ = proceed->clock();
    if (protocol_.welcome().overlap_communication()) {
      communicator_ = std::make_unique<OverlappedCommunicator>(protocol_, proceed->clock(),
                                                               [this] { return stopping(); });
    }
    return true;
  }();
  step_began_ = clock_.Now();
  if (!begun.ok()) return End(begun.status(), "").status();
  if (!*begun) (void)End(absl::OkStatus(), EndReason());
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
  absl::StatusOr<bool> more = communicator_ ? StepOverlapped(loss) : StepSequential(loss);
  step_began_ = clock_.Now();
  return more;
}

absl::StatusOr<bool> Session::StepSequential(float loss) {
  const int64_t clock = clock_of_grant_ + 1;
  if (!protocol_.welcome().peer_to_peer()) {
    absl::StatusOr<tensor::SharedTensorMap> delta = TakeDelta(clock);
    if (!delta.ok()) return End(delta.status(), "");
    if (absl::Status pushed = protocol_.Push(*std::move(delta), clock); !pushed.ok()) {
      return End(pushed, "");
    }
  } else if (protocol_.multicast_planned()) {
    const absl::Time start = clock_.Now();
    tensor::TensorMap own;
    if (absl::Status read = model_.Read(&own); !read.ok()) return End(read, "");
    protocol_.StartPlannedMulticast(std::move(own));
    protocol_.AddWait(clock_.Now() - start);
  }
  if (absl::Status reported = protocol_.Report(clock, loss); !reported.ok()) {
    return End(reported, "");
  }
  if (StepLimitReached()) return End(absl::OkStatus(), "step limit reached");
  absl::StatusOr<std::optional<v1::Proceed>> proceed =
      protocol_.AwaitProceed([this] { return stopping(); });
  if (!proceed.ok()) return End(proceed.status(), "");
  if (!*proceed) return End(absl::OkStatus(), EndReason());
  if (absl::Status applied = Apply(**proceed); !applied.ok()) return End(applied, "");
  clock_of_grant_ = (*proceed)->clock();
  if ((*proceed)->final_average()) {
    tensor::TensorMap average;
    if (absl::Status read = model_.Read(&average); !read.ok()) return End(read, "");
    protocol_.LeaveAfterFinalAverage(**proceed, average);
    return End(absl::OkStatus(), Protocol::kFinalAverageDone);
  }
  return true;
}

absl::StatusOr<bool> Session::StepOverlapped(float loss) {
  if (stopping()) return End(absl::OkStatus(), "shutdown");
  if (std::optional<absl::Status> ended = communicator_->ended()) return End(*ended, EndReason());
  if (absl::Status traded = TradeWithCommunicator(loss); !traded.ok()) return End(traded, "");
  if (!StepLimitReached()) return true;
  // The last steps go out before leaving: each cycle in turn until all are pushed, and the model
  // the last grant named is applied.
  while (true) {
    if (!communicator_->AwaitIdleOrEnded(absl::Milliseconds(200))) {
      if (stopping()) return End(absl::OkStatus(), "shutdown");
      continue;
    }
    if (std::optional<absl::Status> ended = communicator_->ended()) {
      return End(*ended, EndReason());
    }
    if (absl::Status traded = TradeWithCommunicator(loss); !traded.ok()) return End(traded, "");
    if (communicator_->idle() && model_.unpushed_steps() == 0) break;
  }
  return End(absl::OkStatus(), "step limit reached");
}

absl::Status Session::TradeWithCommunicator(float loss) {
  const absl::Time start = clock_.Now();
  if (std::optional<OverlappedCommunicator::Pulled> pulled = communicator_->TakePulled()) {
    RETURN_IF_ERROR(model_.Rebase(std::move(pulled->model.tensors), pulled->includes_clock));
  }
  if (communicator_->idle() && model_.unpushed_steps() > 0) {
    ASSIGN_OR_RETURN(tensor::SharedTensorMap delta, TakeDelta(communicator_->next_clock()));
    communicator_->Send(std::move(delta), loss);
  }
  // Time the caller's loop did not compute: a rebase, a hand-over.
  protocol_.AddWait(clock_.Now() - start);
  return absl::OkStatus();
}

absl::StatusOr<tensor::SharedTensorMap> Session::TakeDelta(int64_t clock) {
  const bool round_mode = protocol_.welcome().push_mode() == v1::APPLY_MODE_ROUND;
  return model_.TakeDelta(round_mode ? std::optional<int64_t>(clock) : std::nullopt);
}

absl::Status Session::Apply(const v1::Proceed& proceed) {
  if (proceed.has_exchange()) {
    tensor::TensorMap own;
    RETURN_IF_ERROR(model_.Read(&own));
    RETURN_IF_ERROR(protocol_.Exchange(proceed, own));
    // The average replaces the local model (nothing is pending in these modes).
    return model_.Replace(own);
  }
  ASSIGN_OR_RETURN(std::optional<PulledModel> pulled, protocol_.Pull(proceed));
  if (!pulled) return absl::OkStatus();
  return model_.Rebase(std::move(pulled->tensors),
                       proceed.pull().has_round() ? proceed.pull().includes_clock() : -1);
}

absl::StatusOr<bool> Session::End(absl::Status status, std::string reason) {
  if (communicator_) communicator_->Halt();
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
  // A final accuracy the caller owes goes with the Leave, at Close.
  if (!protocol_.final_accuracy_due()) LeaveCleanly(reason, std::nullopt);
  return false;
}

std::string Session::EndReason() const {
  return protocol_.done() ? "training is done" : "shutdown";
}

void Session::Close(const std::string& reason, std::optional<double> final_accuracy) {
  if (communicator_) communicator_->Halt();
  // Left already, or ended by an error; unless the final accuracy is still due.
  if (ended_ && !protocol_.final_accuracy_due()) return;
  ended_ = absl::OkStatus();
  LeaveCleanly(reason, final_accuracy);
}

void Session::LeaveCleanly(const std::string& reason, std::optional<double> final_accuracy) {
  protocol_.ResendWhatRestartsLost();
  protocol_.Leave(reason, final_accuracy);
}

}  // namespace syncopate::client
