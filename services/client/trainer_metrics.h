// The trainer's Prometheus metrics (catalogue: docs/metrics.md).
#ifndef SYNCOPATE_CLIENT_TRAINER_METRICS_H_
#define SYNCOPATE_CLIENT_TRAINER_METRICS_H_

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace syncopate::client {

struct TrainerMetrics {
  explicit TrainerMetrics(prometheus::Registry& registry);

  prometheus::Counter& compute_seconds;
  prometheus::Counter& emulated_compute_seconds;
  prometheus::Counter& wait_seconds;
  prometheus::Counter& push_seconds;
  prometheus::Counter& pull_seconds;
  prometheus::Counter& eval_seconds;
  prometheus::Gauge& compute_time_ratio;
  prometheus::Gauge& clock;
  prometheus::Counter& steps;
  prometheus::Gauge& loss;
  prometheus::Gauge& test_accuracy;
  prometheus::Counter& push_bytes;
  prometheus::Counter& push_raw_bytes;
  prometheus::Counter& pull_bytes;
  prometheus::Histogram& push_duration;
  prometheus::Histogram& pull_duration;
  prometheus::Histogram& step_duration;
  prometheus::Histogram& wait_duration;
  // Peer-to-peer modes.
  prometheus::Histogram& exchange_duration;
  prometheus::Counter& exchange_bytes_sent;
  prometheus::Counter& exchange_bytes_received;
  prometheus::Counter& exchange_peers_missed;
  prometheus::Counter& exchange_transfers_preempted;
  prometheus::Gauge& mixing_mass;
  // Exactly once across store restarts (client/store_client.h): pushes re-sent to a shard that
  // lost them, per shard; pushes no longer kept to re-send (a shard that did not checkpoint).
  prometheus::Counter& pushes_resent;
  prometheus::Counter& pushes_unprotected;
  // Times this trainer rejoined the job under a new incarnation after it was evicted
  // (client/job_client.h).
  prometheus::Counter& rejoins;
  // Calls to the Peer service refused by the caller's certificate, label rpc.
  prometheus::Family<prometheus::Counter>& refused_calls;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_TRAINER_METRICS_H_
