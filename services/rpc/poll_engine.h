// gRPC's poll(2) engine for a process of few connections that blocks on its calls: a trainer.
//
// With poll the thread waiting for a reply polls its call's sockets and reads the reply itself;
// under epoll (gRPC's default) another of gRPC's threads often reads it and wakes the waiter
// (bench/docs/bsp-round.md: a 5-trainer BSP round 1-13% shorter, mostly its pull).
// Servers of many connections (the store, the coordinator) keep epoll: poll(2) scans every
// connection at each wait, and with it the coordinator bench neither gained nor lost at 2,000
// connections.
//
// Poll has no background poller: a connection is polled only while a call waits on its channel,
// and otherwise at the client channel's backup polls (every 5 s by default). A reconnection that
// no call waits for (after a refused first try, a channel retries on its own timer, and fail-fast
// calls fail at once meanwhile) then timed out in its TLS handshake again and again: a coordinator
// on poll never reached its store in tests/netns/netns_bandwidth_test.sh.
// tests/integration/poll_reconnect_test.cc fails so without the short backup poll below.
#ifndef SYNCOPATE_RPC_POLL_ENGINE_H_
#define SYNCOPATE_RPC_POLL_ENGINE_H_

#include <optional>
#include <string>
#include <vector>

namespace syncopate::rpc {

inline constexpr char kPollStrategyVariable[] = "GRPC_POLL_STRATEGY";
inline constexpr char kBackupPollVariable[] = "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS";

struct EnvironmentVariable {
  std::string name;
  std::string value;
};

// What PreferPollForAFewConnections adds to the environment of a process whose variables have these
// values (nullopt: unset): GRPC_POLL_STRATEGY=poll when it is unset, and
// GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20 when it is unset and the strategy is, or becomes,
// poll (every 20 ms such a handshake ends in tens of milliseconds; the backup poller is one timer
// per process and polls without waiting). A value the user set is never changed, and a user's
// other strategy (epoll1, all) gets nothing.
std::vector<EnvironmentVariable> PollEnvironment(const std::optional<std::string>& strategy,
                                                 const std::optional<std::string>& backup_poll);

// Adds PollEnvironment() of this process's environment to it. Call before this process makes its
// first gRPC object: gRPC reads the strategy when it first polls, and the processes this one
// starts inherit both (a store or a coordinator a Python script launches would poll too; start
// those with the variables removed). setenv is not thread-safe: call before other threads may read
// the environment (syncopate-trainer calls it first thing; the Python extension as a Session is
// made, as best it can).
void PreferPollForAFewConnections();

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_POLL_ENGINE_H_
