// A gRPC channel to the collector, configured with the contract's limits, reconnect backoff,
// the caller's token (sent as "authorization: Bearer ..." on every call) and TLS.
//
// A client may name one collector or several (a fleet runs a tier of them on one database):
// any gRPC target, and calls are spread over every address it names (round_robin) and move
// off one that fails. The forms:
//   host:port, [::1]:port          one name or literal, resolved by DNS (gRPC's default)
//   dns:host:port, dns:///host:port
//   ipv4:10.0.0.5:50051,10.0.0.6:50051   a list of literals (ipv6:[::1]:50051,[::1]:50052)
//   10.0.0.5:50051,10.0.0.6:50051        a bare list of literals: dialled as ipv4:/ipv6:
//   unix:/run/devtime.sock, unix-abstract:name
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

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

// One address a target names, as the token guard judges it.
struct TargetAddress {
  std::string address;  // as written in the target: "10.0.0.5:50051", "[::1]:1", "/run/x.sock"
  bool loopback;        // on this machine: 127.0.0.0/8, ::1, localhost, a unix socket
};

// What `target` (any form above) dials: the gRPC target (a bare list gets its ipv4:/ipv6:
// prefix) and each address it names. INVALID_ARGUMENT naming the target when gRPC could
// not dial it (an unknown scheme counts as a host name; dns: names one host; ipv4:/ipv6:
// take literals with ports). A URL (http://, https://, grpc://, grpcs://) and a bare port
// ("50051") are refused with the host:port to give instead.
struct ParsedTarget {
  std::string grpc_target;
  std::vector<TargetAddress> addresses;
};
absl::StatusOr<ParsedTarget> ParseTarget(const std::string& target);

// How long one attempt to connect (TCP, TLS and the HTTP/2 handshake) may take, unless the
// caller says: gRPC's own default. A call waits for the connection within its deadline.
inline constexpr std::chrono::milliseconds kDefaultConnectTimeout{20'000};

// A channel to `address` (any target form above), round-robin over its addresses. Refuses,
// before connecting, a target ParseTarget refuses, then to send a token in plaintext unless
// every address is loopback: tokens cross the network only inside TLS. The error names the
// first offending address. `connect_timeout`: how long one connection attempt may take, at
// least (give a command's call deadline, so a slow link gets all of it; the attempt gets a
// second more, so that the call's deadline, not the attempt, ends a call that runs out).
absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectCollector(
    const std::string& address, const ClientCredentials& creds,
    std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout);

// A plaintext channel without a token (tests, and collectors running with --no-auth); a
// target that does not parse is handed to gRPC as it is.
std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address);

// A client context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout);

// "UNAVAILABLE: failed to connect to all addresses" — code name first, for users.
std::string Describe(const grpc::Status& status);

}  // namespace devtime::wire
