#include "cli/serve_command.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace syncopate::cli {

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& flag,
                                                          const std::string& text) {
  const size_t colon = text.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(text.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", text, ": expected HOST:PORT, e.g. 10.0.0.5:7000 (port 0: any)"));
  }
  return std::pair<std::string, int>{text.substr(0, colon), port};
}

absl::Status CheckCanListen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found); error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen host ", host, ": ", gai_strerror(error)));
  }
  sockaddr_in address = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  // As gRPC binds: a port in TIME_WAIT is free, one a server listens on is not.
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  const int error = errno;
  close(fd);
  if (!bound) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen=", host, ":", port, ": cannot listen there: ", strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunSummary> RunServe(ServeOptions options) {
  ASSIGN_OR_RETURN(const auto listen, ParseHostPort("--listen", options.listen));
  RETURN_IF_ERROR(CheckCanListen(listen.first, listen.second));
  LocalClusterOptions& cluster = options.run.cluster;
  cluster.listen_host = listen.first;
  cluster.coordinator_port = listen.second;
  cluster.advertise_host = options.advertise;
  if (cluster.advertise_host.empty() && listen.first == "0.0.0.0") {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) {
      return absl::InvalidArgumentError("--listen on 0.0.0.0 needs --advertise=HOST");
    }
    cluster.advertise_host = name;
  }
  cluster.external_trainers = true;
  cluster.pool_certificate = options.pool_certificate;
  // No trainer runs here: the built-in trainer's defaults only keep validation quiet.
  cluster.slowdowns.assign(cluster.trainers, 1.0);
  return RunLocal(std::move(options.run));
}

}  // namespace syncopate::cli
