// The store shard's Prometheus metrics (catalogue: docs/metrics.md).
#ifndef SYNCOPATE_STORE_STORE_METRICS_H_
#define SYNCOPATE_STORE_STORE_METRICS_H_

#include <string>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace syncopate::store {

// Registered once per process; the members are thread-safe prometheus-cpp metrics.
struct StoreMetrics {
  explicit StoreMetrics(prometheus::Registry& registry);

  // Counts a rejected request under its gRPC code name (bounded label values).
  void Reject(const absl::Status& status);

  prometheus::Counter& push_bytes;
  prometheus::Counter& pull_bytes;
  prometheus::Counter& pushes_applied;
  prometheus::Counter& pushes_duplicate;
  prometheus::Counter& rounds_closed;
  prometheus::Counter& rounds_summed_on_arrival;
  prometheus::Counter& pulls_parked;
  prometheus::Histogram& push_duration;
  prometheus::Histogram& pull_duration;
  prometheus::Histogram& apply_duration;
  prometheus::Gauge& live_version;
  prometheus::Gauge& last_closed_round;
  prometheus::Gauge& model_bytes;
  prometheus::Gauge& streams_open;
  prometheus::Counter& idle_streams_cancelled;
  prometheus::Counter& checkpoints_written;
  prometheus::Counter& checkpoint_failures;
  prometheus::Gauge& last_checkpoint_time;
  prometheus::Gauge& restored_checkpoint_age;
  prometheus::Counter& rounds_skipped;
  prometheus::Family<prometheus::Counter>& rejected;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_STORE_METRICS_H_
