// The edge between Abseil statuses and gRPC, and the channel/server settings every Syncopate
// process shares (message limits for chunked tensors, keepalive that survives idle sessions).
#ifndef SYNCOPATE_RPC_GRPC_UTIL_H_
#define SYNCOPATE_RPC_GRPC_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "rpc/credentials.h"

namespace syncopate::rpc {

// Message limit on both ends by default: comfortably above the 4 MiB largest chunk (tensor.h).
inline constexpr int kMaxMessageBytes = 16 << 20;
// The least a server may be limited to: the largest chunk and its message's header.
inline constexpr int kMinMessageBytes = 5 << 20;

// absl and gRPC status codes are numerically equal; the message is kept.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// A channel to `address`, whose server must be a `server_role` (with TLS: its certificate says so),
// with Syncopate's limits and keepalive.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const Credentials& credentials, Role server_role);

// A client context whose deadline is `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout);

// A server-streaming method whose replies a client reads as raw bytes (grpc::ByteBuffer), to
// decode them without protobuf's copies. gRPC C++ has no public synchronous generic call; this
// uses the factory the generated stubs use. `name` ("/package.Service/Method") must be a string
// literal: gRPC keeps the pointer. Create once per channel and reuse.
class RawServerStream {
 public:
  RawServerStream(const char* name, std::shared_ptr<grpc::Channel> channel);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> Start(
      grpc::ClientContext* ctx, const google::protobuf::Message& request) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::internal::RpcMethod method_;
};

// A client-streaming method whose requests a client writes as raw bytes (grpc::ByteBuffer), to
// send tensor chunks without protobuf's copies (chunk_frames.h); its reply is read as `response`
// (a protobuf message) by Finish. As RawServerStream: `name` must be a string literal; create once
// per channel and reuse.
class RawClientStream {
 public:
  RawClientStream(const char* name, std::shared_ptr<grpc::Channel> channel);
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> Start(
      grpc::ClientContext* ctx, google::protobuf::Message* response) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::internal::RpcMethod method_;
};

// What one client connection may hold of a server.
struct ServerLimits {
  // Streams open at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS): further ones
  // wait in the client until one ends. A trainer holds a few per server.
  int max_streams_per_connection = 256;
  // The largest message a client may send (a larger one is refused RESOURCE_EXHAUSTED before it
  // is buffered whole); at least kMinMessageBytes.
  int max_message_bytes = kMaxMessageBytes;
};

// Builds and starts a server on `address` ("127.0.0.1:0" picks a port) with `services`, gRPC's
// health service (reporting SERVING), `credentials`, `limits` and Syncopate's settings. UNAVAILABLE
// when it cannot bind; INVALID_ARGUMENT for a stream limit below 1 or a message limit below
// kMinMessageBytes.
absl::Status StartServer(const std::string& address, const std::vector<grpc::Service*>& services,
                         const Credentials& credentials, std::unique_ptr<grpc::Server>* server,
                         int* port, const ServerLimits& limits = ServerLimits());

// A callback-API streaming call refused before anything was read or written: `Reactor` is the
// method's reactor type (grpc::ServerReadReactor<T>, ServerWriteReactor<T>, ServerBidiReactor<I,
// O>). Deletes itself when gRPC is done with it.
template <typename Reactor>
class Refused final : public Reactor {
 public:
  explicit Refused(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

// A callback-API unary method's answer, given at once on the thread that read the request.
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx, const grpc::Status& status);

// One environment variable a process gives gRPC unless it is set already.
struct EnvironmentDefault {
  const char* name;
  const char* value;
};

// What PreferPollForAFewConnections sets:
// - GRPC_POLL_STRATEGY=poll: gRPC waits for its sockets with poll(2) instead of epoll. For a
//   process that holds few connections and blocks on its calls (a trainer): with poll the thread
//   waiting for a reply polls its call's sockets itself, where under epoll another of gRPC's
//   threads often reads the reply and wakes the waiter (bench/README, "gRPC's poll strategy": a
//   5-trainer BSP round 1-10% shorter, mostly its pull).
// - GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20: poll has no background poller, so a
//   connection is polled only while a call waits on its channel, and otherwise at each backup
//   poll (gRPC's default: every 5 s). A reconnection that no call waits for (after a refused
//   first try the channel retries on its own timer) is then polled only at backup polls, and its
//   TLS handshake timed out before it ended, again and again: a coordinator on poll never reached
//   its store in the netns test (tests/netns/netns_bandwidth_test.sh), and
//   tests/integration/poll_reconnect_test.cc fails so. Every 20 ms such a handshake ends in tens
//   of milliseconds; the backup poller is one timer per process and polls without waiting.
//   Epoll ignores the variable.
// Servers of many connections (the store, the coordinator) keep epoll: poll(2) scans every
// connection at each wait, and with it the coordinator bench neither gained nor lost at 2,000
// connections.
const std::vector<EnvironmentDefault>& PollForAFewConnections();

// Sets each of PollForAFewConnections() in this process's environment unless it is set. Call
// before this process makes its first gRPC object (gRPC reads the variables when it starts) and
// before it starts threads (setenv is not thread-safe). The Python package does the same at import
// (syncopate/__init__.py, from the same list).
void PreferPollForAFewConnections();

// Calls grpc.health.v1.Health/Check on `channel`; OK when the server reports SERVING.
absl::Status CheckHealth(grpc::Channel& channel, absl::Duration timeout);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_GRPC_UTIL_H_
