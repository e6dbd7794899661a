// Every Syncopate process serves its metrics as Prometheus text on its own HTTP port.
#ifndef SYNCOPATE_METRICS_METRICS_SERVER_H_
#define SYNCOPATE_METRICS_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace syncopate::metrics {

// Owns a registry and the HTTP exposer that serves it at /metrics. Thread-safe as prometheus-cpp
// is.
class MetricsServer {
 public:
  // Binds `address` ("127.0.0.1:0" picks a free port). INVALID_ARGUMENT/UNAVAILABLE when it cannot.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address);
  // Stops serving and closes the port, at once: not after the HTTP server's 2 s accept poll.
  ~MetricsServer();

  prometheus::Registry& registry() { return *registry_; }
  // Serves, beside the registry, the families `collect` returns at each scrape (on the scraping
  // thread): for metrics cheaper to compute when read than to keep current at every event.
  // `collect` must stay callable while this server lives.
  void AddCollector(std::function<std::vector<prometheus::MetricFamily>()> collect);
  std::shared_ptr<prometheus::Registry> shared_registry() { return registry_; }
  int port() const { return port_; }

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer,
                std::shared_ptr<prometheus::Registry> registry, std::string host, int port);

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectors_;
  std::string host_;  // where this process reaches the port: loopback for a wildcard address
  int port_;
};

// One unlabelled metric of each kind, registered under `name` with `help`: the common case for a
// process whose identity is its scrape target.
prometheus::Counter& AddCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help);
prometheus::Gauge& AddGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help);
prometheus::Histogram& AddHistogram(prometheus::Registry& registry, const std::string& name,
                                    const std::string& help,
                                    prometheus::Histogram::BucketBoundaries buckets);

// `count` bucket bounds start, start*factor, ... (Prometheus' ExponentialBuckets).
prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

// The registry's families in the Prometheus text format (what /metrics serves).
std::string SerializeText(prometheus::Registry& registry);

}  // namespace syncopate::metrics

#endif  // SYNCOPATE_METRICS_METRICS_SERVER_H_
