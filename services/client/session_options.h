// How a client session behaves, whatever the model: the emulated straggler, evaluation, and the
// limits on how long it waits and how far it goes.
#ifndef SYNCOPATE_CLIENT_SESSION_OPTIONS_H_
#define SYNCOPATE_CLIENT_SESSION_OPTIONS_H_

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

struct SessionOptions {
  // A step's real compute is the time from the return of one Session::Step (or Start) to the next
  // call. Step stretches it to max(real compute, step_time) x slowdown by sleeping (on the
  // session's clock), and counts the sleep as emulated compute: step_time emulates an
  // accelerator's step on a machine without one, slowdown a straggler. slowdown is at least 1,
  // step_time not negative (0: real compute only).
  double slowdown = 1.0;
  absl::Duration step_time = absl::ZeroDuration();
  // When the coordinator asks this trainer to evaluate, it evaluates at most this often.
  absl::Duration eval_interval = absl::Seconds(2);
  // Give up when no directive arrives for this long (the coordinator is stuck or gone, or its
  // stores fail). While the mode holds a grant, the coordinator answers each heartbeat
  // (HeartbeatAck), so a long wait for a straggler does not count; keep it well above the
  // coordinator's --heartbeat-interval.
  absl::Duration directive_timeout = absl::Minutes(2);
  // Leave after this many steps; 0: no limit.
  int64_t max_steps = 0;
  // Evaluates a model the session received (a pulled round, a peers' average) and returns its test
  // accuracy in [0, 1]; called on the thread that received it, which must not be the caller's
  // training step. Unset: Session::evaluation_due() says when an evaluation is wanted, and the
  // caller evaluates its own model and reports it with Session::ReportAccuracy (under wbsp-overlap
  // the pull that asked for it may be applied only at the next Step).
  std::function<double(const tensor::TensorMap& model)> evaluate;
  // With `evaluate`: evaluate on a thread of the session's own (background_evaluator.h), a
  // snapshot at a time, so evaluating never stalls this trainer's steps and the accuracy is
  // reported with the time its snapshot was taken; false: on the thread that received the model.
  bool evaluate_in_background = true;
  // Polled at least every 200 ms while the session waits, on the caller's thread and (overlapped
  // modes) on the session's communication thread; returning true stops the session as
  // Session::Stop does (a language binding checks its pending signals here, on its own thread).
  std::function<bool()> interrupted;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_SESSION_OPTIONS_H_
