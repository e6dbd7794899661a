#include "metrics/metrics_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace syncopate::metrics {
namespace {

// Connects to 127.0.0.1:port; -1 when refused.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET /metrics over HTTP/1.0: the whole response.
std::string Scrape(int port) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
  close(fd);
  return response;
}

TEST(MetricsServer, ServesItsRegistryAndCollectors) {
  auto server = MetricsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  AddCounter((*server)->registry(), "test_events_total", "Events.").Increment(3);
  (*server)->AddCollector([] {
    prometheus::Registry extra;
    AddGauge(extra, "test_collected", "Collected at each scrape.").Set(7);
    return extra.Collect();
  });
  const std::string page = Scrape((*server)->port());
  EXPECT_NE(page.find("test_events_total 3"), std::string::npos) << page;
  EXPECT_NE(page.find("test_collected 7"), std::string::npos) << page;
}

// A wildcard address is reached on loopback, which is where the stopping server knocks.
TEST(MetricsServer, StoppingClosesThePortOnEveryAddress) {
  for (const char* address : {"127.0.0.1:0", "0.0.0.0:0"}) {
    auto server = MetricsServer::Start(address);
    ASSERT_TRUE(server.ok()) << server.status();
    const int port = (*server)->port();
    ASSERT_NE(Scrape(port), "") << address;
    server->reset();
    const int after = Connect(port);
    EXPECT_EQ(after, -1) << address << ": the port still accepts";
    if (after >= 0) close(after);
  }
}

TEST(MetricsServer, AnAddressInUseIsUnavailable) {
  auto first = MetricsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = MetricsServer::Start("127.0.0.1:" + std::to_string((*first)->port()));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

}  // namespace
}  // namespace syncopate::metrics
