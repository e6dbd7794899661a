// How a session goes through a step, one strategy per mode family (session.h): what it sends after
// the caller's step, whether it waits for the coordinator's directive, and how it loads the model
// the directive names. The session keeps what every family shares: the start, the step's time and
// count, and how the session ends.
//   - StoreRounds (bsp, asp, ssp, dssp, wbsp, hybrid): pushes the step's delta, reports the clock,
//     waits for the grant and rebases onto the model it names, all inside Step;
//   - PeerExchanges (dssync, selmcast, selmcast-ssp, orpheus-ssp): sends no delta (it starts the
//     multicast the last grant planned, in the background modes), reports the clock, waits for the
//     grant and replaces the model with the average of its exchange;
//   - Overlapped (wbsp-overlap): hands each delta to the communication thread
//     (overlapped_communicator.h) and applies the model it pulled, between steps, without waiting.
#ifndef SYNCOPATE_CLIENT_STEP_STRATEGY_H_
#define SYNCOPATE_CLIENT_STEP_STRATEGY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "base/clock.h"
#include "client/local_model.h"
#include "client/protocol.h"
#include "client/session_options.h"

namespace syncopate::client {

// What a strategy works on, all owned by the session, which outlives the strategy.
struct StepContext {
  const SessionOptions& options;
  LocalModel& model;
  Protocol& protocol;
  const base::Clock& clock;
  // The session is asked to end (Session::stopping). Thread-safe.
  std::function<bool()> stopping;
  // The caller reached SessionOptions::max_steps.
  std::function<bool()> step_limit_reached;
};

// How a step ends the session: with an error, or, when `status` is OK, for `reason`.
struct Ending {
  absl::Status status;
  std::string reason;
};

// Called from the session's caller thread only.
class StepStrategy {
 public:
  virtual ~StepStrategy() = default;
  // Loads what the first directive names into the model (Session::Start).
  virtual absl::Status Begin(const v1::Proceed& first) = 0;
  // After the caller's step, counted: nullopt to take the next step, or how the session ends
  // (after a final average, this trainer has left already or owes its accuracy).
  virtual std::optional<Ending> Step(float loss) = 0;
  // Stops whatever runs beside the caller (the overlapped family's thread). Idempotent.
  virtual void Halt() {}
};

// Why a session that did not fail ends without a step limit: "training is done" (the coordinator
// said so) or "shutdown".
std::string EndReason(const Protocol& protocol);

// The strategy of `context.protocol.welcome()`'s mode family.
std::unique_ptr<StepStrategy> MakeStepStrategy(const StepContext& context);

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_STEP_STRATEGY_H_
