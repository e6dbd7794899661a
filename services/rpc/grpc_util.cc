#include "rpc/grpc_util.h"

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace syncopate::rpc {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const Credentials& credentials, Role server_role) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30 * 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10 * 1000);
  // Separate channels per use keep a bulk pull from delaying a session message.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A peer that restarts (a store shard, the coordinator) is found again within a second: gRPC's
  // default reconnect backoff grows to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A server's certificate names no host (its peer is checked by the identity in it: the
  // verifier, rpc/credentials.h), so the name the TLS handshake sends (SNI) is one every
  // certificate holds: the address's host would make the server log that none of its
  // certificates matches it, on every connection to a host other than 127.0.0.1.
  if (credentials.secure()) args.SetSslTargetNameOverride("localhost");
  return grpc::CreateCustomChannel(address, credentials.ForChannel(server_role), args);
}

namespace {

// Syncopate's limits and keepalive.
void ConfigureServerBuilder(grpc::ServerBuilder& builder, const ServerLimits& limits) {
  builder.SetMaxReceiveMessageSize(limits.max_message_bytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_streams_per_connection);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10 * 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10 * 1000);
}

}  // namespace

absl::Status StartServer(const std::string& address, const std::vector<grpc::Service*>& services,
                         const Credentials& credentials, std::unique_ptr<grpc::Server>* server,
                         int* port, const ServerLimits& limits) {
  if (limits.max_streams_per_connection < 1) {
    return absl::InvalidArgumentError(absl::StrCat("at least one stream per connection, not ",
                                                   limits.max_streams_per_connection));
  }
  if (limits.max_message_bytes < kMinMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("messages of at least ", kMinMessageBytes,
                     " bytes must be allowed (the largest chunk), not ", limits.max_message_bytes));
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(builder, limits);
  builder.AddListeningPort(address, credentials.ForServer(), port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  *server = builder.BuildAndStart();
  if (*server == nullptr || *port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve gRPC on ", address));
  }
  (*server)->GetHealthCheckService()->SetServingStatus(true);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return ctx;
}

RawServerStream::RawServerStream(const char* name, std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      method_(name, grpc::internal::RpcMethod::SERVER_STREAMING, channel_) {}

std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> RawServerStream::Start(
    grpc::ClientContext* ctx, const google::protobuf::Message& request) const {
  return std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>>(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), method_, ctx,
                                                                    request));
}

RawClientStream::RawClientStream(const char* name, std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      method_(name, grpc::internal::RpcMethod::CLIENT_STREAMING, channel_) {}

std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> RawClientStream::Start(
    grpc::ClientContext* ctx, google::protobuf::Message* response) const {
  return std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>>(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel_.get(), method_, ctx,
                                                                    response));
}

RawBidiStream::RawBidiStream(const char* name, std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      method_(name, grpc::internal::RpcMethod::BIDI_STREAMING, channel_) {}

std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> RawBidiStream::Start(
    grpc::ClientContext* ctx) const {
  return std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel_.get(), method_, ctx));
}

void StopServer(grpc::Server& server) { server.Shutdown(std::chrono::system_clock::now()); }

absl::Status CheckHealth(grpc::Channel& channel, absl::Duration timeout) {
  auto stub = grpc::health::v1::Health::NewStub(
      std::shared_ptr<grpc::Channel>(&channel, [](grpc::Channel*) {}));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  auto ctx = ContextWithTimeout(timeout);
  grpc::Status status = stub->Check(ctx.get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(absl::StrCat("not serving: ", response.status()));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::rpc
