// A trainer's session in a Syncopate job, driven by the caller's own training loop: the worker side
// of every mode, for any model. The caller registers its parameters (parameters.h), calls Start
// once, then takes local training steps on them, calling Step after each:
//
//   client::Session session(options, coordinator, store, parameters, metrics, trace, clock);
//   RETURN_IF_ERROR(session.Start());
//   for (bool more = true; more;) {
//     const float loss = TrainOneStep();          // the caller's forward, backward, update
//     ASSIGN_OR_RETURN(more, session.Step(loss));
//   }
//
// Step pushes the change since the last push, reports the clock with its timings, and obeys the
// coordinator's directive: wait within the staleness bound, pull round r or the live model and
// rebase the local model onto it (client/local_model.h), or exchange models with peers. When it
// returns true the parameters hold the synchronised model (under wbsp-overlap: the latest model the
// background thread pulled, rebased); when it returns false, this trainer's last model (its last
// steps pushed). One strategy per mode family (step_strategy.h):
//   - store modes (bsp, asp, ssp, dssp, wbsp, hybrid): all of it inside Step;
//   - overlapped (wbsp-overlap): pushes, reports and pulls run on the session's own thread
//     (overlapped_communicator.h) while the caller steps; Step only hands over the delta and
//     applies the pulled model between steps, and never waits for the coordinator;
//   - peer-to-peer: in rounds (dssync, selmcast), Step exchanges models with the peers the
//     directive names and averages them in; in the background (selmcast-ssp, orpheus-ssp), Step
//     starts the multicast the last grant planned, of the model with the step just taken, then
//     averages in what has arrived while the caller computes on.
// Time between Steps is the caller's compute; time inside them is wait and communication.
#ifndef SYNCOPATE_CLIENT_SESSION_H_
#define SYNCOPATE_CLIENT_SESSION_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "client/links.h"
#include "client/local_model.h"
#include "client/parameters.h"
#include "client/peer_link.h"
#include "client/protocol.h"
#include "client/session_options.h"
#include "client/step_strategy.h"
#include "client/trace_writer.h"
#include "client/trainer_metrics.h"

namespace syncopate::client {

// Start, Step and Close from one thread (the caller's training loop); Stop, Timings,
// evaluation_due and ReportAccuracy from any.
class Session {
 public:
  // Every reference must outlive the session; `peers` may be null where no peer-to-peer mode
  // runs. The parameters change only between Steps (the caller's step) and inside them (the
  // session's writes); their values now are this trainer's offer of the initial model.
  Session(SessionOptions options, CoordinatorLink& coordinator, StoreLink& store,
          Parameters& parameters, TrainerMetrics& metrics, TraceWriter& trace,
          const base::Clock& clock, PeerLink* peers = nullptr);
  ~Session();  // Close("closed")

  // Offers the initial model (the job keeps the first trainer's), starts heartbeats, waits for the
  // first directive and loads the model it names into the parameters. Call once, first. The errors
  // of Step.
  absl::Status Start();

  // Call after each local training step, with its loss. True: take the next step. False: training
  // is over (the coordinator said it is done, max_steps was reached, or Stop or
  // SessionOptions::interrupted asked), and the session has left the job. An error ends the
  // session too: ABORTED when this trainer was evicted, UNAVAILABLE when the coordinator or a
  // store is gone, DEADLINE_EXCEEDED when no directive came within directive_timeout, the store's
  // refusal of a push or pull (links.h), the parameters' read or write error (parameters.h); the
  // session then leaves the job, and every later Step returns the same error.
  absl::StatusOr<bool> Step(float loss);

  // Asks the session to end: a Step (or Start) waiting for the coordinator in another thread
  // returns within about 200 ms, and the next Step returns false. A transfer under way finishes
  // first (bounded by the store RPC deadline, or the exchange timeout); one waiting out a store
  // outage gives up at its next retry if its store link asks stopping() (StoreClient::
  // set_interrupt), and the session ends as stopped, not with an error.
  void Stop() { stop_requested_ = true; }
  // Thread-safe. Stop was called, or SessionOptions::interrupted says so.
  bool stopping() const;
  // Stops the communication thread and leaves the job, unless the session has ended already (it
  // left, or an error ended it). After a final average this trainer is to evaluate
  // (final_accuracy_due), it leaves then, as done, with `final_accuracy` if given. A Step that
  // ended the session while an evaluation was due (evaluation_due) left the Leave to this Close,
  // so that an accuracy reported in between goes with it. Idempotent.
  void Close(const std::string& reason = "closed",
             std::optional<double> final_accuracy = std::nullopt);
  // The last Step averaged the job's final model, and this trainer is its evaluator without an
  // evaluation function: evaluate the model and pass the accuracy to Close.
  bool final_accuracy_due() const { return protocol_.final_accuracy_due(); }

  // Declares that this trainer pauses its training on purpose, for longer than a step (a
  // validation pass, a first compiled step, a checkpoint save), until SetPaused(false): the
  // coordinator does not evict it meanwhile for making no progress. Its heartbeats go on, so a
  // trainer that dies while paused is still evicted, and the others may wait for it as the mode
  // says. Thread-safe.
  void SetPaused(bool paused) { coordinator_.SetPaused(paused); }

  // See SessionOptions::evaluate.
  bool evaluation_due() const { return protocol_.evaluation_due(); }
  void ReportAccuracy(double accuracy) { protocol_.ReportAccuracy(accuracy); }
  v1::TrainerTimings Timings() const { return protocol_.Timings(); }
  // The trainers in the job and this one's place among them, by rank (0 to size - 1), as of the
  // last grant: what a data sampler shards an epoch by. Thread-safe.
  Protocol::World world() const { return protocol_.world(); }
  int64_t steps() const { return steps_; }
  const v1::Welcome& welcome() const { return protocol_.welcome(); }

 private:
  // Ends the session: false (and a Leave with `reason`) for OK, the error otherwise. A store call
  // given up for the stop (IsGivenUpForStop) is OK, "shutdown".
  absl::StatusOr<bool> End(absl::Status status, std::string reason);
  // Leaves without an error: first re-sends what a store restart lost of this trainer's pushes
  // (Protocol::ResendWhatRestartsLost), then leaves.
  void LeaveCleanly(const std::string& reason, std::optional<double> final_accuracy);
  bool StepLimitReached() const { return options_.max_steps > 0 && steps_ >= options_.max_steps; }

  const SessionOptions options_;
  CoordinatorLink& coordinator_;
  LocalModel model_;
  Protocol protocol_;
  const base::Clock& clock_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<int64_t> steps_{0};
  // This mode family's way through a step (step_strategy.h); declared after what it works on.
  std::unique_ptr<StepStrategy> strategy_;
  absl::Time step_began_;  // when the caller's current step began (the last Start/Step return)
  bool started_ = false;
  std::optional<absl::Status> ended_;  // OK: over without an error
  // Over without an error, the Leave waiting for Close (its reason): see End.
  std::optional<std::string> deferred_leave_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_SESSION_H_
