#include "store/store_metrics.h"

#include "absl/strings/ascii.h"
#include "metrics/metrics_server.h"

namespace syncopate::store {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

}  // namespace

StoreMetrics::StoreMetrics(prometheus::Registry& r)
    : push_bytes(BuildCounter()
                     .Name("syncopate_store_push_bytes_total")
                     .Help("Tensor payload bytes received in pushes and initializations.")
                     .Register(r)
                     .Add({})),
      pull_bytes(BuildCounter()
                     .Name("syncopate_store_pull_bytes_total")
                     .Help("Tensor payload bytes sent in pulls.")
                     .Register(r)
                     .Add({})),
      pushes_applied(BuildCounter()
                         .Name("syncopate_store_pushes_applied_total")
                         .Help("Pushes applied to the model or to the open round.")
                         .Register(r)
                         .Add({})),
      pushes_duplicate(BuildCounter()
                           .Name("syncopate_store_pushes_duplicate_total")
                           .Help("Retried pushes recognised by their idempotency key and skipped.")
                           .Register(r)
                           .Add({})),
      rounds_closed(BuildCounter()
                        .Name("syncopate_store_rounds_closed_total")
                        .Help("Rounds closed and published as snapshots.")
                        .Register(r)
                        .Add({})),
      push_duration(BuildHistogram()
                        .Name("syncopate_store_push_duration_seconds")
                        .Help("Time from the first message of a push stream to its reply.")
                        .Register(r)
                        .Add({}, metrics::ExponentialBuckets(0.0005, 2.5, 12))),
      pull_duration(BuildHistogram()
                        .Name("syncopate_store_pull_duration_seconds")
                        .Help("Time to stream one pull.")
                        .Register(r)
                        .Add({}, metrics::ExponentialBuckets(0.0005, 2.5, 12))),
      apply_duration(BuildHistogram()
                         .Name("syncopate_store_apply_duration_seconds")
                         .Help("Time the model lock was held to apply one push.")
                         .Register(r)
                         .Add({}, metrics::ExponentialBuckets(0.00005, 2.5, 12))),
      live_version(BuildGauge()
                       .Name("syncopate_store_live_version")
                       .Help("Version of the live model (increments per applied push or round).")
                       .Register(r)
                       .Add({})),
      last_closed_round(BuildGauge()
                            .Name("syncopate_store_last_closed_round")
                            .Help("Last published round snapshot (0: initial model).")
                            .Register(r)
                            .Add({})),
      model_bytes(BuildGauge()
                      .Name("syncopate_store_model_bytes")
                      .Help("Bytes of float32 parameters held by this shard.")
                      .Register(r)
                      .Add({})),
      rejected(BuildCounter()
                   .Name("syncopate_store_requests_rejected_total")
                   .Help("Requests rejected, by gRPC status code.")
                   .Register(r)) {}

void StoreMetrics::Reject(const absl::Status& status) {
  rejected.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}})
      .Increment();
}

}  // namespace syncopate::store
