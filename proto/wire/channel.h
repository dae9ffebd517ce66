// A gRPC channel to the collector, configured with the contract's limits and keepalive.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"

namespace devtime::wire {

// Insecure channel to `address` (host:port). TLS arrives with agent identity (see issues).
std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address);

// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout);

// "UNAVAILABLE: failed to connect to all addresses" — code name first, for users.
std::string Describe(const grpc::Status& status);

}  // namespace devtime::wire
