// One store shard served in this process on 127.0.0.1 (a port picked by the system), for tests
// that need a real store behind a coordinator. As the real store, it parks a pull of a round not
// closed yet until the round closes (`pull_wait` at most; zero refuses it at once).
#ifndef SYNCOPATE_TESTS_INTEGRATION_LOCAL_STORE_H_
#define SYNCOPATE_TESTS_INTEGRATION_LOCAL_STORE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "prometheus/registry.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"
#include "store/parameter_table.h"
#include "store/round_waiters.h"
#include "store/store_metrics.h"
#include "store/store_service.h"
#include "watchdog_sweep.h"

namespace syncopate {

struct LocalStore {
  // With a `watchdog` (outliving the store), quiet streams are cancelled.
  explicit LocalStore(absl::Duration pull_wait = absl::Seconds(5),
                      rpc::StreamWatchdog* watchdog = nullptr)
      : waiters({pull_wait}, base::MonotonicClock::Get()),
        service(table, metrics, /*shard=*/0, /*shard_count=*/1, /*incarnation=*/1,
                rpc::Authorizer(rpc::Credentials::Insecure(), nullptr), watchdog, &waiters) {
    waiters.Start();
  }
  // Serves the shard; its address is then address().
  absl::Status Start() {
    return rpc::StartServer("127.0.0.1:0", {&service}, rpc::Credentials::Insecure(), &server,
                            &port);
  }
  void Stop() {
    waiters.Stop();
    if (server) rpc::StopServer(*server);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  prometheus::Registry registry;
  store::StoreMetrics metrics{registry};
  store::ParameterTable table;
  store::RoundWaiters waiters;
  store::StoreService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

}  // namespace syncopate

#endif  // SYNCOPATE_TESTS_INTEGRATION_LOCAL_STORE_H_
