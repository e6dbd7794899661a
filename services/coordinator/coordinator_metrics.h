// The coordinator's Prometheus metrics (catalogue: docs/metrics.md).
#ifndef SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_
#define SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace syncopate::coordinator {

struct CoordinatorMetrics {
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  prometheus::Gauge& live_trainers;
  prometheus::Gauge& min_clock;
  prometheus::Gauge& staleness_bound;
  prometheus::Counter& joins;
  prometheus::Counter& leaves;
  prometheus::Family<prometheus::Counter>& evictions;  // label reason
  prometheus::Counter& rounds_closed;
  prometheus::Counter& grants;
  prometheus::Counter& preempted_transfers;
  prometheus::Histogram& staleness_at_grant;
  prometheus::Histogram& directive_latency;
  prometheus::Histogram& close_round_duration;
  prometheus::Gauge& groups;
  prometheus::Counter& store_call_failures;
  prometheus::Counter& store_restarts;
  prometheus::Counter& store_rounds_lost;
  prometheus::Counter& recoveries;
  prometheus::Counter& resumes;
  prometheus::Counter& pauses;
  // Per live trainer (label trainer = its name; bounded by the job's trainers).
  prometheus::Family<prometheus::Gauge>& trainer_staleness_bound;
  prometheus::Family<prometheus::Gauge>& trainer_group;
  prometheus::Family<prometheus::Gauge>& trainer_link_rate;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_
