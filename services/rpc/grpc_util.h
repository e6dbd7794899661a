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

// A bidirectional-streaming method whose messages a client writes and reads as raw bytes
// (a store's Transfer). As RawServerStream: `name` must be a string literal; create once per
// channel and reuse.
class RawBidiStream {
 public:
  RawBidiStream(const char* name, std::shared_ptr<grpc::Channel> channel);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> Start(
      grpc::ClientContext* ctx) const;

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

// Stops `server` at once: calls in progress are cancelled, as when its process ends. (Shutdown()
// without a deadline would wait for every call to end, and a trainer's Transfer stream stays open
// between its transfers.)
void StopServer(grpc::Server& server);

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

// Calls grpc.health.v1.Health/Check on `channel`; OK when the server reports SERVING.
absl::Status CheckHealth(grpc::Channel& channel, absl::Duration timeout);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_GRPC_UTIL_H_
