// The collector's own accept loop for its plaintext gRPC port (issue 26: fd exhaustion).
//
// gRPC 1.51's listener gives up for good on the first accept4() that fails with EMFILE ("Failed
// accept4: Too many open files"): the port stays bound, connections queue in the kernel and are
// never served again, while /metrics keeps answering. So the collector accepts connections
// itself and hands each one to gRPC (grpc::AddInsecureChannelFromFd) once it has spoken:
//  - it accepts only while the process's open descriptors stay `headroom` below RLIMIT_NOFILE
//    (what PostgreSQL connections, files and /metrics need keeps that room), and waits for
//    descriptors to come free when they do not: a full table pauses accepting, never ends it;
//  - a connection that has sent nothing is "waiting"; it is handed over when its first bytes
//    arrive (they must begin the HTTP/2 preface), closed when they do not, closed after
//    `preface_timeout` of silence, and the oldest waiting one is closed to make room when
//    `max_waiting` are waiting, so idle sockets cannot starve health probes and devtimectl.
// Connections gRPC holds are bounded by GRPC_ARG_MAX_CONNECTION_IDLE_MS (server.cc).
//
// Only the plaintext port: gRPC has no public way to take a TLS connection from a descriptor,
// so with --tls-cert gRPC listens itself, with GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS bounding
// connections that never finish their handshake (server.cc).
//
// Thread-safety: Listen, then Serve once the grpc::Server is started; Stop from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace devtime::collector {

struct FrontDoorOptions {
  std::chrono::milliseconds preface_timeout{10'000};
  int headroom = 0;     // descriptors kept free; 0 = an eighth of the limit, at least 32
  int max_waiting = 0;  // connections waiting for their first bytes; 0 = a quarter of the limit
};

class FrontDoor {
 public:
  // Binds and listens on "host:port" (port 0 picks a free one).
  static absl::StatusOr<std::unique_ptr<FrontDoor>> Listen(const std::string& address,
                                                           const FrontDoorOptions& options);
  ~FrontDoor();  // Stop()s
  FrontDoor(const FrontDoor&) = delete;
  FrontDoor& operator=(const FrontDoor&) = delete;

  int port() const { return port_; }
  // Starts the accept thread, which hands connections to `server` (started, and alive until Stop).
  void Serve(grpc::Server* server);
  // Stops accepting and closes the listening socket and every connection still waiting.
  void Stop();

 private:
  FrontDoor() = default;
  void Loop(grpc::Server* server);

  FrontDoorOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop wakes the loop
  int port_ = 0;
  std::thread thread_;
};

// Raises this process's soft RLIMIT_NOFILE to its hard limit; returns the soft limit now.
long RaiseFileLimit();

}  // namespace devtime::collector
