#include "store/store_metrics.h"

#include "absl/strings/ascii.h"
#include "metrics/metrics_server.h"

namespace syncopate::store {
StoreMetrics::StoreMetrics(prometheus::Registry& r)
    : push_bytes(
          metrics::AddCounter(r, "syncopate_store_push_bytes_total",
                              "Tensor payload bytes received in pushes and initializations.")),
      pull_bytes(metrics::AddCounter(r, "syncopate_store_pull_bytes_total",
                                     "Tensor payload bytes sent in pulls.")),
      pushes_applied(metrics::AddCounter(r, "syncopate_store_pushes_applied_total",
                                         "Pushes applied to the model or to the open round.")),
      pushes_duplicate(
          metrics::AddCounter(r, "syncopate_store_pushes_duplicate_total",
                              "Retried pushes recognised by their idempotency key and skipped.")),
      rounds_closed(metrics::AddCounter(r, "syncopate_store_rounds_closed_total",
                                        "Rounds closed and published as snapshots.")),
      rounds_summed_on_arrival(metrics::AddCounter(
          r, "syncopate_store_rounds_summed_on_arrival_total",
          "Rounds that took every pending push, added to the model in one pass from the sum kept "
          "as the pushes arrived.")),
      pulls_parked(metrics::AddCounter(
          r, "syncopate_store_pulls_parked_total",
          "Pulls of a round not closed yet that waited for it (pipelined grants).")),
      push_duration(
          metrics::AddHistogram(r, "syncopate_store_push_duration_seconds",
                                "Time from the first message of a push stream to its reply.",
                                metrics::ExponentialBuckets(0.0005, 2.5, 12))),
      pull_duration(metrics::AddHistogram(r, "syncopate_store_pull_duration_seconds",
                                          "Time to stream one pull.",
                                          metrics::ExponentialBuckets(0.0005, 2.5, 12))),
      apply_duration(metrics::AddHistogram(r, "syncopate_store_apply_duration_seconds",
                                           "Time the model lock was held to apply one push.",
                                           metrics::ExponentialBuckets(0.00005, 2.5, 12))),
      live_version(
          metrics::AddGauge(r, "syncopate_store_live_version",
                            "Version of the live model (increments per applied push or round).")),
      last_closed_round(metrics::AddGauge(r, "syncopate_store_last_closed_round",
                                          "Last published round snapshot (0: initial model).")),
      model_bytes(metrics::AddGauge(r, "syncopate_store_model_bytes",
                                    "Bytes of float32 parameters held by this shard.")),
      streams_open(metrics::AddGauge(
          r, "syncopate_store_streams_open",
          "Push and pull streams, and transfers on Transfer streams, being served.")),
      idle_streams_cancelled(metrics::AddCounter(
          r, "syncopate_store_idle_streams_cancelled_total",
          "Push and pull streams cancelled after --stream-idle-timeout without a message.")),
      checkpoints_written(metrics::AddCounter(r, "syncopate_store_checkpoints_written_total",
                                              "Checkpoints of the shard's model written.")),
      checkpoint_failures(metrics::AddCounter(r, "syncopate_store_checkpoint_failures_total",
                                              "Checkpoint writes that failed.")),
      last_checkpoint_time(
          metrics::AddGauge(r, "syncopate_store_last_checkpoint_timestamp_seconds",
                            "Unix time of the last checkpoint written (0: none yet).")),
      restored_checkpoint_age(metrics::AddGauge(
          r, "syncopate_store_restored_checkpoint_age_seconds",
          "Age of the checkpoint this shard restored at start (0: none): the loss window.")),
      rounds_skipped(metrics::AddCounter(
          r, "syncopate_store_rounds_skipped_total",
          "Rounds a restarted shard skipped to catch up with the job (their updates were lost).")),
      rejected(prometheus::BuildCounter()
                   .Name("syncopate_store_requests_rejected_total")
                   .Help("Requests rejected, by gRPC status code.")
                   .Register(r)) {}

void StoreMetrics::Reject(const absl::Status& status) {
  rejected.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}})
      .Increment();
}

}  // namespace syncopate::store
