#include "proto/wire/channel.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "grpcpp/support/client_interceptor.h"
#include "proto/wire/limits.h"
#include "proto/wire/validation.h"

namespace devtime::wire {
namespace {

// Adds the caller's token to every call on the channel.
class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(const std::string& header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", header_});
    }
    methods->Proceed();
  }

 private:
  const std::string header_;  // a copy: the interceptor may outlive its factory
};

class TokenInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string token) : header_("Bearer " + std::move(token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new TokenInterceptor(header_);
  }

 private:
  const std::string header_;  // outlives every interceptor: the channel owns the factory
};

absl::StatusOr<std::string> ReadWhole(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(what + " " + path + ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// ---- targets ----------------------------------------------------------------------------------

absl::Status BadTarget(const std::string& target, const std::string& why) {
  return absl::InvalidArgumentError("collector address '" + target + "': " + why);
}

bool IsIpv4(const std::string& host, bool* loopback) {
  in_addr ip{};
  if (inet_pton(AF_INET, host.c_str(), &ip) != 1) return false;
  *loopback = (ntohl(ip.s_addr) >> 24) == 127;  // 127.0.0.0/8
  return true;
}

// `host` without brackets; a zone ("fe80::1%eth0") names an interface, not a host.
bool IsIpv6(const std::string& host, bool* loopback) {
  in6_addr ip{};
  if (inet_pton(AF_INET6, host.substr(0, host.find('%')).c_str(), &ip) != 1) return false;
  // ::1, or an IPv4-mapped loopback (::ffff:127.x.y.z).
  *loopback = IN6_IS_ADDR_LOOPBACK(&ip) || (IN6_IS_ADDR_V4MAPPED(&ip) && ip.s6_addr[12] == 127);
  return true;
}

// Splits "host:port", "[v6]:port", "host", "[v6]" or an unbracketed IPv6 literal (gRPC's
// rules); the port is "" when absent. False when brackets do not close.
bool SplitHostPort(const std::string& text, std::string* host, std::string* port) {
  if (!text.empty() && text[0] == '[') {
    std::size_t close = text.find(']');
    if (close == std::string::npos) return false;
    *host = text.substr(1, close - 1);
    std::string rest = text.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') return false;
    *port = rest.empty() ? "" : rest.substr(1);
    return true;
  }
  std::size_t colon = text.find(':');
  if (colon != std::string::npos && text.find(':', colon + 1) == std::string::npos) {
    *host = text.substr(0, colon);
    *port = text.substr(colon + 1);
  } else {  // no colon, or several: an IPv6 literal without a port
    *host = text;
    port->clear();
  }
  return true;
}

bool IsPort(const std::string& port) {
  return !port.empty() && port.size() <= 5 &&
         port.find_first_not_of("0123456789") == std::string::npos && std::stoi(port) <= 65535;
}

// A name or literal for DNS (bare targets and dns:). Only a literal loopback or "localhost"
// is known to stay on this machine.
absl::StatusOr<TargetAddress> ResolvedAddress(const std::string& target, const std::string& text) {
  std::string host, port;
  if (!SplitHostPort(text, &host, &port) || host.empty())
    return BadTarget(target, "'" + text + "' is not host:port");
  if (text.find_first_of("/,") != std::string::npos)
    return BadTarget(target, "'" + text + "' is not host:port");
  bool loopback = false;
  if (!IsIpv4(host, &loopback) && !IsIpv6(host, &loopback)) {
    std::string lower = host;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    loopback = lower == "localhost" || lower == "localhost.";
  }
  return TargetAddress{text, loopback};
}

// One literal of an ipv4:/ipv6: list: "a.b.c.d:port" or "[v6]:port".
absl::StatusOr<TargetAddress> LiteralAddress(const std::string& target, const std::string& text,
                                             bool v6) {
  std::string host, port;
  bool loopback = false;
  bool bracketed = !text.empty() && text[0] == '[';
  if (!SplitHostPort(text, &host, &port) || !IsPort(port) || bracketed != v6 ||
      !(v6 ? IsIpv6(host, &loopback) : IsIpv4(host, &loopback))) {
    return BadTarget(
        target, "'" + text + "' is not " + (v6 ? "[IPv6 address]:port" : "an IPv4 address:port"));
  }
  return TargetAddress{text, loopback};
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    std::size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma - begin);
    if (!item.empty() && item[0] == '/') item.erase(0, 1);  // "ipv4:///a:1" (gRPC strips it)
    items.push_back(item);
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

// "ipv4:" / "ipv6:" followed by a list of literals.
absl::StatusOr<ParsedTarget> ParseLiteralList(const std::string& target, const std::string& list,
                                              bool v6) {
  std::string path = list;
  if (path.rfind("//", 0) == 0) {  // "ipv4:///A:P": an empty authority, then the path
    if (path.rfind("///", 0) != 0)
      return BadTarget(target, "ipv4: and ipv6: take no authority (write ipv4:A:P,B:P)");
    path.erase(0, 2);
  }
  ParsedTarget parsed{target, {}};
  for (const std::string& item : SplitList(path)) {
    auto address = LiteralAddress(target, item, v6);
    if (!address.ok()) return address.status();
    parsed.addresses.push_back(*address);
  }
  return parsed;
}

// "dns:host:port", "dns:///host:port" or "dns://server/host:port": one host.
absl::StatusOr<ParsedTarget> ParseDns(const std::string& target, std::string rest) {
  bool own_server = false;
  if (rest.rfind("//", 0) == 0) {
    std::size_t slash = rest.find('/', 2);
    if (slash == std::string::npos) return BadTarget(target, "dns:// needs a /host:port");
    own_server = slash > 2;  // the named DNS server says where "localhost" is
    rest = rest.substr(slash + 1);
  } else if (!rest.empty() && rest[0] == '/') {
    rest.erase(0, 1);
  }
  if (rest.find(',') != std::string::npos)
    return BadTarget(target, "dns: names one host; list addresses as ipv4:A:P,B:P");
  auto address = ResolvedAddress(target, rest);
  if (!address.ok()) return address.status();
  if (own_server) address->loopback = false;
  return ParsedTarget{target, {*address}};
}

// A bare "A:P,B:P": literals of one family, dialled as an ipv4:/ipv6: list.
absl::StatusOr<ParsedTarget> ParseBareList(const std::string& target) {
  bool v6 = !target.empty() && target[0] == '[';
  auto parsed = ParseLiteralList(target, target, v6);
  if (!parsed.ok()) {
    return BadTarget(target,
                     "a list holds IP addresses of one family with ports (A:P,B:P or "
                     "[A]:P,[B]:P); give a name as dns:NAME:PORT");
  }
  parsed->grpc_target = (v6 ? "ipv6:" : "ipv4:") + target;
  return parsed;
}

// ---- the channel ------------------------------------------------------------------------------

grpc::ChannelArguments ChannelArgs(std::chrono::milliseconds connect_timeout) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  // Reconnect soon after a collector restart; gRPC's default backoff grows to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // gRPC reads its "min reconnect backoff" as the time one connection attempt (TCP, TLS,
  // HTTP/2 SETTINGS) may take. At 250 ms, a link with 0.3 s of latency never connected and
  // every call failed at once, whatever its deadline. The attempt gets a second more than
  // connect_timeout: a call made with that same timeout as its deadline (devtimectl
  // --timeout) must end with its own DEADLINE_EXCEEDED ("no answer within --timeout"), not
  // with the failed attempt's UNAVAILABLE. With equal times the two timers fall due within a
  // millisecond of each other, and on a loaded machine either could run first.
  constexpr std::chrono::milliseconds kAttemptGrace{1000};
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(
                  (connect_timeout + kAttemptGrace).count(), 1, std::numeric_limits<int>::max())));
  // Every address a target names serves calls; one that fails is skipped until it is back.
  // The default service config, never one from DNS TXT records.
  args.SetServiceConfigJSON(R"({"loadBalancingConfig":[{"round_robin":{}}]})");
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  return args;
}

// The two slips people make most, named with the fix before anything else judges the target:
// a URL ("http://host:50051", "grpc://host:50051") and a bare port ("50051", ":50051").
absl::Status CommonMistake(const std::string& target) {
  if (std::size_t sep = target.find("://"); sep != std::string::npos) {
    std::string scheme = target.substr(0, sep);
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "http" || scheme == "https" || scheme == "grpc" || scheme == "grpcs") {
      std::string authority = target.substr(sep + 3);
      authority = authority.substr(0, authority.find('/'));
      std::string host, port;
      if (!SplitHostPort(authority, &host, &port) || host.empty()) host = "127.0.0.1";
      if (authority.find(']') != std::string::npos) host = "[" + host + "]";
      return BadTarget(target, "is a URL; give host:port (e.g. " + host + ":" +
                                   (IsPort(port) ? port : "50051") + ")");
    }
  }
  std::string digits = target[0] == ':' ? target.substr(1) : target;
  if (IsPort(digits)) {
    return BadTarget(target, "is a bare port; did you mean 127.0.0.1:" + digits + "?");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ParsedTarget> ParseTarget(const std::string& target) {
  if (target.empty()) return BadTarget(target, "empty");
  if (absl::Status mistake = CommonMistake(target); !mistake.ok()) return mistake;
  std::size_t colon = target.find(':');
  std::string scheme = colon == std::string::npos ? "" : target.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : target.substr(colon + 1);
  if (scheme == "ipv4" || scheme == "ipv6") return ParseLiteralList(target, rest, scheme == "ipv6");
  if (scheme == "dns") return ParseDns(target, rest);
  if (scheme == "unix" || scheme == "unix-abstract") {
    ParsedTarget parsed{target, {}};
    for (const std::string& path : SplitList(rest)) {
      if (path.empty()) return BadTarget(target, "a socket path is empty");
      parsed.addresses.push_back({path, true});  // a socket on this machine
    }
    return parsed;
  }
  // Anything else is a name for gRPC's default resolver (dns:///), as gRPC dials it.
  if (target.find(',') != std::string::npos) return ParseBareList(target);
  // A scheme this guard does not know ("xds:///name"): gRPC judges it; it may lead anywhere.
  if (target.find('/') != std::string::npos) return ParsedTarget{target, {{target, false}}};
  auto address = ResolvedAddress(target, target);
  if (!address.ok()) return address.status();
  return ParsedTarget{target, {*address}};
}

absl::StatusOr<ClientCredentials> LoadClientCredentials(const std::string& token_file,
                                                        const std::string& tls_ca_file,
                                                        const std::string& tls_cert_file,
                                                        const std::string& tls_key_file) {
  ClientCredentials creds;
  if (!token_file.empty()) {
    // Issue 26: a world-writable token file is refused, a world-readable one warned about.
    if (auto mode = CheckSecretFileMode(token_file, "token file", std::cerr); !mode.ok()) {
      return mode;
    }
    auto token = ReadWhole(token_file, "token file");
    if (!token.ok()) return token.status();
    creds.token = FirstLine(*token);
    if (creds.token.empty())
      return absl::InvalidArgumentError("token file " + token_file + " is empty");
  }
  struct File {
    const std::string& path;
    std::string* into;
    const char* what;
  };
  for (File f : {File{tls_ca_file, &creds.tls_ca, "TLS CA file"},
                 File{tls_cert_file, &creds.tls_cert, "TLS certificate"},
                 File{tls_key_file, &creds.tls_key, "TLS key"}}) {
    if (f.path.empty()) continue;
    auto content = ReadWhole(f.path, f.what);
    if (!content.ok()) return content.status();
    *f.into = *content;
  }
  if (creds.tls_cert.empty() != creds.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "a TLS client certificate needs its key, and a key its certificate");
  }
  return creds;
}

std::string TokenFromEnvironment() {
  if (const char* token = std::getenv("DEVTIME_TOKEN"); token && *token) return token;
  if (const char* file = std::getenv("DEVTIME_TOKEN_FILE"); file && *file) {
    auto content = ReadWhole(file, "token file");
    if (content.ok()) return FirstLine(*content);
  }
  return "";
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectCollector(
    const std::string& address, const ClientCredentials& creds,
    std::chrono::milliseconds connect_timeout) {
  auto target = ParseTarget(address);
  if (!target.ok()) return target.status();
  std::shared_ptr<grpc::ChannelCredentials> transport;
  if (creds.tls_ca.empty()) {
    for (const TargetAddress& each : target->addresses) {
      if (creds.token.empty() || each.loopback) continue;
      return absl::FailedPreconditionError(
          "refusing to send a token unencrypted to " + each.address +
          (each.address == address ? "" : " (in " + address + ")") +
          ": give the collector's CA (--tls-ca / tls_ca) or use loopback addresses only");
    }
    transport = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = creds.tls_ca;
    tls.pem_private_key = creds.tls_key;
    tls.pem_cert_chain = creds.tls_cert;
    transport = grpc::SslCredentials(tls);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!creds.token.empty())
    interceptors.push_back(std::make_unique<TokenInterceptorFactory>(creds.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      target->grpc_target, transport, ChannelArgs(connect_timeout), std::move(interceptors));
}

std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address) {
  auto target = ParseTarget(address);
  return grpc::CreateCustomChannel(target.ok() ? target->grpc_target : address,
                                   grpc::InsecureChannelCredentials(),
                                   ChannelArgs(kDefaultConnectTimeout));
}

std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN_CODE";
  }
}

}  // namespace

std::string Describe(const grpc::Status& status) {
  return std::string(CodeName(status.error_code())) + ": " + status.error_message();
}

}  // namespace devtime::wire
