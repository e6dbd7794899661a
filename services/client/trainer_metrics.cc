#include "client/trainer_metrics.h"

#include "metrics/metrics_server.h"

namespace syncopate::client {
namespace {

prometheus::Histogram& Seconds(prometheus::Registry& r, const char* name, const char* help) {
  return metrics::AddHistogram(r, name, help, metrics::ExponentialBuckets(0.0005, 2.5, 13));
}

}  // namespace

TrainerMetrics::TrainerMetrics(prometheus::Registry& r)
    : compute_seconds(metrics::AddCounter(
          r, "syncopate_trainer_compute_seconds_total",
          "Seconds in training steps, real and emulated (step time, slowdown).")),
      emulated_compute_seconds(metrics::AddCounter(
          r, "syncopate_trainer_emulated_compute_seconds_total",
          "Seconds of compute_seconds slept to emulate an accelerator step or a straggler.")),
      wait_seconds(
          metrics::AddCounter(r, "syncopate_trainer_wait_seconds_total",
                              "Seconds waiting for the coordinator's permission to proceed.")),
      push_seconds(metrics::AddCounter(r, "syncopate_trainer_push_seconds_total",
                                       "Seconds blocked pushing deltas to the store.")),
      pull_seconds(metrics::AddCounter(r, "syncopate_trainer_pull_seconds_total",
                                       "Seconds blocked pulling the model from the store.")),
      eval_seconds(metrics::AddCounter(r, "syncopate_trainer_eval_seconds_total",
                                       "Seconds evaluating test accuracy.")),
      compute_time_ratio(
          metrics::AddGauge(r, "syncopate_trainer_compute_time_ratio",
                            "Compute seconds divided by wall seconds since the trainer joined.")),
      clock(metrics::AddGauge(r, "syncopate_trainer_clock", "Iterations completed and pushed.")),
      steps(metrics::AddCounter(r, "syncopate_trainer_steps_total", "Training steps computed.")),
      loss(metrics::AddGauge(r, "syncopate_trainer_loss", "Training loss of the last step.")),
      test_accuracy(
          metrics::AddGauge(r, "syncopate_trainer_test_accuracy",
                            "Test accuracy of the last evaluated model (evaluator trainer only).")),
      push_bytes(metrics::AddCounter(r, "syncopate_trainer_push_bytes_total",
                                     "Delta bytes pushed, as sent (compressed under a codec).")),
      push_raw_bytes(metrics::AddCounter(r, "syncopate_trainer_push_raw_bytes_total",
                                         "Delta bytes pushed, as float32 before compression.")),
      pull_bytes(
          metrics::AddCounter(r, "syncopate_trainer_pull_bytes_total", "Model bytes pulled.")),
      push_duration(Seconds(r, "syncopate_trainer_push_duration_seconds",
                            "Duration of one push to all shards.")),
      pull_duration(Seconds(r, "syncopate_trainer_pull_duration_seconds",
                            "Duration of one pull from all shards.")),
      step_duration(Seconds(r, "syncopate_trainer_step_duration_seconds",
                            "Compute time of one training step (slowdown included).")),
      wait_duration(Seconds(r, "syncopate_trainer_wait_duration_seconds",
                            "Time waiting for one Proceed directive.")),
      exchange_duration(Seconds(r, "syncopate_trainer_exchange_duration_seconds",
                                "One peer-to-peer exchange: sending the model and collecting "
                                "the peers' models.")),
      exchange_bytes_sent(metrics::AddCounter(r, "syncopate_trainer_exchange_sent_bytes_total",
                                              "Model bytes sent to peers.")),
      exchange_bytes_received(metrics::AddCounter(r,
                                                  "syncopate_trainer_exchange_received_bytes_total",
                                                  "Model bytes received from peers.")),
      exchange_peers_missed(
          metrics::AddCounter(r, "syncopate_trainer_exchange_peers_missed_total",
                              "Peers that could not be sent to, or did not deliver, by the "
                              "exchange deadline.")),
      exchange_transfers_preempted(metrics::AddCounter(
          r, "syncopate_trainer_exchange_transfers_preempted_total",
          "Model transfers to peers cancelled before the end: preempted by the coordinator or "
          "superseded on their receiver by a newer multicast (selmcast-ssp, orpheus-ssp).")),
      mixing_mass(metrics::AddGauge(r, "syncopate_trainer_mixing_mass",
                                    "This trainer's push-sum mass after its last exchange (1 at "
                                    "the job's start, 0 for a trainer joining it under way).")),
      pushes_resent(metrics::AddCounter(
          r, "syncopate_trainer_pushes_resent_total",
          "Pushes re-sent to a store shard that lost them in a restart (per shard: a push re-sent "
          "to two shards counts twice).")),
      pushes_unprotected(metrics::AddCounter(
          r, "syncopate_trainer_pushes_unprotected_total",
          "Pushes no longer kept to re-send after a store restart: their shard did not confirm a "
          "checkpoint for too long.")),
      rejoins(metrics::AddCounter(
          r, "syncopate_trainer_rejoins_total",
          "Times this trainer rejoined the job under a new incarnation after it was evicted (a "
          "pause past the eviction timeout, a stalled step).")),
      refused_calls(prometheus::BuildCounter()
                        .Name("syncopate_trainer_refused_calls_total")
                        .Help("Calls to this trainer's Peer service refused because the caller's "
                              "certificate does not allow them, by method (Exchange).")
                        .Register(r)) {}

}  // namespace syncopate::client
