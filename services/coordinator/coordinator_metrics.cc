#include "coordinator/coordinator_metrics.h"

#include "metrics/metrics_server.h"

namespace syncopate::coordinator {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& r)
    : live_trainers(BuildGauge()
                        .Name("syncopate_coordinator_live_trainers")
                        .Help("Trainers currently members of the job.")
                        .Register(r)
                        .Add({})),
      min_clock(BuildGauge()
                    .Name("syncopate_coordinator_min_clock")
                    .Help("Smallest clock over live trainers.")
                    .Register(r)
                    .Add({})),
      staleness_bound(BuildGauge()
                          .Name("syncopate_coordinator_staleness_bound")
                          .Help("Staleness bound in force (-1: unbounded).")
                          .Register(r)
                          .Add({})),
      joins(BuildCounter()
                .Name("syncopate_coordinator_joins_total")
                .Help("Trainer joins (including rejoins).")
                .Register(r)
                .Add({})),
      leaves(BuildCounter()
                 .Name("syncopate_coordinator_leaves_total")
                 .Help("Trainers that left cleanly.")
                 .Register(r)
                 .Add({})),
      evictions(
          BuildCounter()
              .Name("syncopate_coordinator_evictions_total")
              .Help("Trainers evicted, by reason (heartbeat_timeout, disconnected, protocol).")
              .Register(r)),
      rounds_closed(BuildCounter()
                        .Name("syncopate_coordinator_rounds_closed_total")
                        .Help("Rounds closed on every store shard.")
                        .Register(r)
                        .Add({})),
      grants(BuildCounter()
                 .Name("syncopate_coordinator_grants_total")
                 .Help("Proceed directives sent.")
                 .Register(r)
                 .Add({})),
      staleness_at_grant(BuildHistogram()
                             .Name("syncopate_coordinator_staleness_at_grant")
                             .Help("Clock minus minimum live clock of the trainer at each grant.")
                             .Register(r)
                             .Add({}, prometheus::Histogram::BucketBoundaries{0, 1, 2, 3, 4, 6, 8,
                                                                              12, 16, 24, 32})),
      directive_latency(BuildHistogram()
                            .Name("syncopate_coordinator_directive_latency_seconds")
                            .Help("From a clock report's arrival to its Proceed being queued.")
                            .Register(r)
                            .Add({}, metrics::ExponentialBuckets(0.0001, 3, 12))),
      close_round_duration(BuildHistogram()
                               .Name("syncopate_coordinator_close_round_duration_seconds")
                               .Help("Time to close a round on every store shard.")
                               .Register(r)
                               .Add({}, metrics::ExponentialBuckets(0.0001, 3, 12))) {}

}  // namespace syncopate::coordinator
