// A loopback port held bound but not listening: connections to it are refused, and nobody else
// takes it, yet a gRPC server (which binds with SO_REUSEPORT, as this socket does) can still
// listen on it. For tests of what a client does when its first connection is refused.
#ifndef SYNCOPATE_TESTS_INTEGRATION_HELD_PORT_H_
#define SYNCOPATE_TESTS_INTEGRATION_HELD_PORT_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace syncopate::testing {

// The socket (close it when done) and the port in `*port`; -1 on failure.
inline int HoldPort(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(address.sin_port);
  return fd;
}

}  // namespace syncopate::testing

#endif  // SYNCOPATE_TESTS_INTEGRATION_HELD_PORT_H_
