#include "metrics/metrics_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <exception>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "prometheus/text_serializer.h"

namespace syncopate::metrics {
namespace {

class FunctionCollectable final : public prometheus::Collectable {
 public:
  explicit FunctionCollectable(std::function<std::vector<prometheus::MetricFamily>()> collect)
      : collect_(std::move(collect)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return collect_(); }

 private:
  std::function<std::vector<prometheus::MetricFamily>()> collect_;
};

// The host to connect to for a server bound to `address` (host:port, IPv6 in brackets).
std::string LocalHostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon == std::string::npos ? 0 : colon);
  host = std::string(absl::StripSuffix(absl::StripPrefix(host, "["), "]"));
  if (host.empty() || host == "0.0.0.0" || host == "*") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

// Opens and at once closes one connection to the first of `addresses` that takes it, waiting at
// most 100 ms for each.
void Knock(const addrinfo* addresses) {
  for (const addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const timeval limit{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    const bool connected = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
    if (connected) break;
  }
}

}  // namespace

MetricsServer::MetricsServer(std::unique_ptr<prometheus::Exposer> exposer,
                             std::shared_ptr<prometheus::Registry> registry, std::string host,
                             int port)
    : exposer_(std::move(exposer)),
      registry_(std::move(registry)),
      host_(std::move(host)),
      port_(port) {}

MetricsServer::~MetricsServer() {
  // civetweb's accept loop sees the stop only when its poll returns, which without a connection
  // takes its 2 s quantum: every process would take that long to exit. Connections wake it, so
  // this knocks on the port until the exposer is gone (each knock is accepted, read to its end
  // and closed). The address is resolved once: a name must not cost a lookup per knock.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  if (getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &addresses) != 0) {
    exposer_.reset();  // no knocking: the stop takes up to the poll's 2 s
    return;
  }
  absl::Notification stopped;
  std::thread knocker([&] {
    do {
      Knock(addresses);
    } while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
  });
  exposer_.reset();
  stopped.Notify();
  knocker.join();
  freeaddrinfo(addresses);
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", e.what()));
  }
  auto registry = std::make_shared<prometheus::Registry>();
  exposer->RegisterCollectable(registry);
  std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty())
    return absl::UnavailableError(absl::StrCat("metrics not listening: ", address));
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(exposer), std::move(registry),
                                                          LocalHostOf(address), ports.front()));
}

void MetricsServer::AddCollector(std::function<std::vector<prometheus::MetricFamily>()> collect) {
  collectors_.push_back(std::make_shared<FunctionCollectable>(std::move(collect)));
  exposer_->RegisterCollectable(collectors_.back());
}

prometheus::Counter& AddCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Gauge& AddGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Histogram& AddHistogram(prometheus::Registry& registry, const std::string& name,
                                    const std::string& help,
                                    prometheus::Histogram::BucketBoundaries buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add(
      {}, std::move(buckets));
}

prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) bounds.push_back(b);
  return bounds;
}

std::string SerializeText(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace syncopate::metrics
