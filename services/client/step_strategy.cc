#include "client/step_strategy.h"

#include <utility>

#include "base/status_macros.h"
#include "client/overlapped_communicator.h"

namespace syncopate::client {
namespace {

// The delta to push as clock `clock`, kept pending until a round holds it where the mode pushes
// to rounds.
absl::StatusOr<tensor::SharedTensorMap> TakeDelta(const StepContext& c, int64_t clock) {
  const bool round_mode = c.protocol.welcome().push_mode() == v1::APPLY_MODE_ROUND;
  return c.model.TakeDelta(round_mode ? std::optional<int64_t>(clock) : std::nullopt);
}

// Loads what `proceed` names into the model: the average of the peers' models (an exchange), or
// the pulled model, rebased (a peer-to-peer joiner's first grant pulls the store's initial model).
absl::Status Apply(const StepContext& c, const v1::Proceed& proceed) {
  if (proceed.has_exchange()) {
    tensor::TensorMap own;
    RETURN_IF_ERROR(c.model.Read(&own));
    RETURN_IF_ERROR(c.protocol.Exchange(proceed, own));
    // The average replaces the local model (nothing is pending in these modes).
    return c.model.Replace(own);
  }
  ASSIGN_OR_RETURN(std::optional<PulledModel> pulled, c.protocol.Pull(proceed));
  if (!pulled) return absl::OkStatus();
  return c.model.Rebase(std::move(pulled->tensors),
                        proceed.pull().has_round() ? proceed.pull().includes_clock() : -1);
}

std::optional<Ending> Failed(absl::Status status) { return Ending{std::move(status), ""}; }

// The families that wait for the coordinator's grant inside Step: send, report, wait, apply.
class Sequential : public StepStrategy {
 public:
  explicit Sequential(const StepContext& context) : c_(context) {}

  absl::Status Begin(const v1::Proceed& first) override {
    RETURN_IF_ERROR(Apply(c_, first));
    clock_of_grant_ = first.clock();
    return absl::OkStatus();
  }

  std::optional<Ending> Step(float loss) override {
    const int64_t clock = clock_of_grant_ + 1;
    if (absl::Status sent = Send(clock); !sent.ok()) return Failed(sent);
    if (absl::Status reported = c_.protocol.Report(clock, loss); !reported.ok()) {
      return Failed(reported);
    }
    if (c_.step_limit_reached()) return Ending{absl::OkStatus(), "step limit reached"};
    absl::StatusOr<std::optional<v1::Proceed>> proceed = c_.protocol.AwaitProceed(c_.stopping);
    if (!proceed.ok()) return Failed(proceed.status());
    if (!*proceed) return Ending{absl::OkStatus(), EndReason(c_.protocol)};
    if (absl::Status applied = Apply(c_, **proceed); !applied.ok()) return Failed(applied);
    clock_of_grant_ = (*proceed)->clock();
    if ((*proceed)->final_average()) {
      tensor::TensorMap average;
      if (absl::Status read = c_.model.Read(&average); !read.ok()) return Failed(read);
      c_.protocol.LeaveAfterFinalAverage(**proceed, average);
      return Ending{absl::OkStatus(), Protocol::kFinalAverageDone};
    }
    return std::nullopt;
  }

 protected:
  // Sends what the step made, as clock `clock`, before it is reported.
  virtual absl::Status Send(int64_t clock) = 0;

  const StepContext c_;

 private:
  int64_t clock_of_grant_ = 0;  // the clock the last grant named
};

class StoreRounds final : public Sequential {
 public:
  using Sequential::Sequential;

 private:
  absl::Status Send(int64_t clock) override {
    ASSIGN_OR_RETURN(tensor::SharedTensorMap delta, TakeDelta(c_, clock));
    return c_.protocol.Push(std::move(delta), clock);
  }
};

class PeerExchanges final : public Sequential {
 public:
  using Sequential::Sequential;

 private:
  // The background modes' multicast that the last grant planned, of the model with this step.
  absl::Status Send(int64_t) override {
    if (!c_.protocol.multicast_planned()) return absl::OkStatus();
    const absl::Time start = c_.clock.Now();
    tensor::TensorMap own;
    RETURN_IF_ERROR(c_.model.Read(&own));
    c_.protocol.StartPlannedMulticast(std::move(own));
    c_.protocol.AddWait(c_.clock.Now() - start);
    return absl::OkStatus();
  }
};

class Overlapped final : public StepStrategy {
 public:
  explicit Overlapped(const StepContext& context) : c_(context) {}

  absl::Status Begin(const v1::Proceed& first) override {
    RETURN_IF_ERROR(Apply(c_, first));
    communicator_ =
        std::make_unique<OverlappedCommunicator>(c_.protocol, first.clock(), c_.stopping);
    return absl::OkStatus();
  }

  std::optional<Ending> Step(float loss) override {
    if (c_.stopping()) return Ending{absl::OkStatus(), "shutdown"};
    if (std::optional<absl::Status> ended = communicator_->ended()) {
      return Ending{*ended, EndReason(c_.protocol)};
    }
    if (absl::Status traded = Trade(loss); !traded.ok()) return Failed(traded);
    if (!c_.step_limit_reached()) return std::nullopt;
    // The last steps go out before leaving: each cycle in turn until all are pushed, and the model
    // the last grant named is applied.
    while (true) {
      if (!communicator_->AwaitIdleOrEnded(absl::Milliseconds(200))) {
        if (c_.stopping()) return Ending{absl::OkStatus(), "shutdown"};
        continue;
      }
      if (std::optional<absl::Status> ended = communicator_->ended()) {
        return Ending{*ended, EndReason(c_.protocol)};
      }
      if (absl::Status traded = Trade(loss); !traded.ok()) return Failed(traded);
      if (communicator_->idle() && c_.model.unpushed_steps() == 0) break;
    }
    return Ending{absl::OkStatus(), "step limit reached"};
  }

  void Halt() override {
    if (communicator_) communicator_->Halt();
  }

 private:
  // Applies the model the communication thread pulled, and hands it the next delta when it waits.
  absl::Status Trade(float loss) {
    const absl::Time start = c_.clock.Now();
    if (std::optional<OverlappedCommunicator::Pulled> pulled = communicator_->TakePulled()) {
      RETURN_IF_ERROR(c_.model.Rebase(std::move(pulled->model.tensors), pulled->includes_clock));
    }
    if (communicator_->idle() && c_.model.unpushed_steps() > 0) {
      ASSIGN_OR_RETURN(tensor::SharedTensorMap delta, TakeDelta(c_, communicator_->next_clock()));
      communicator_->Send(std::move(delta), loss);
    }
    // Time the caller's loop did not compute: a rebase, a hand-over.
    c_.protocol.AddWait(c_.clock.Now() - start);
    return absl::OkStatus();
  }

  const StepContext c_;
  std::unique_ptr<OverlappedCommunicator> communicator_;
};

}  // namespace

std::string EndReason(const Protocol& protocol) {
  return protocol.done() ? "training is done" : "shutdown";
}

std::unique_ptr<StepStrategy> MakeStepStrategy(const StepContext& context) {
  const v1::Welcome& welcome = context.protocol.welcome();
  if (welcome.overlap_communication()) return std::make_unique<Overlapped>(context);
  if (welcome.peer_to_peer()) return std::make_unique<PeerExchanges>(context);
  return std::make_unique<StoreRounds>(context);
}

}  // namespace syncopate::client
