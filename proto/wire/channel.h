// A gRPC channel to the collector, configured with the contract's limits, reconnect backoff,
// the caller's token (sent as "authorization: Bearer ..." on every call) and TLS.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace devtime::wire {

// Who the client is and how it reaches the collector. File contents, not paths.
struct ClientCredentials {
  std::string token;     // admin or agent token; "" = none
  std::string tls_ca;    // PEM of the CA that signed the collector's certificate; "" = plaintext
  std::string tls_cert;  // PEM client certificate for mutual TLS (optional)
  std::string tls_key;   // PEM private key of tls_cert

  static ClientCredentials WithToken(std::string token) {
    ClientCredentials creds;
    creds.token = std::move(token);
    return creds;
  }
};

// Reads the given files (empty path = not used). A token file holds the token on its
// first line. Errors name the file.
absl::StatusOr<ClientCredentials> LoadClientCredentials(const std::string& token_file,
                                                        const std::string& tls_ca_file,
                                                        const std::string& tls_cert_file,
                                                        const std::string& tls_key_file);

// Token from $DEVTIME_TOKEN, else the file named by $DEVTIME_TOKEN_FILE, else "".
std::string TokenFromEnvironment();

// A channel to `address` (host:port). Refuses to send a token in plaintext to anything but a
// loopback address: tokens cross the network only inside TLS.
absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectCollector(const std::string& address,
                                                                const ClientCredentials& creds);

// A plaintext channel without a token (tests, and collectors running with --no-auth).
std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address);

// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout);

// "UNAVAILABLE: failed to connect to all addresses" — code name first, for users.
std::string Describe(const grpc::Status& status);

}  // namespace devtime::wire
