#include "proto/wire/channel.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "grpcpp/support/client_interceptor.h"
#include "proto/wire/limits.h"

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
  const std::string& header_;
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

bool IsLoopback(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.rfind("ipv4:", 0) == 0) host = host.substr(5);
  if (host.rfind("dns:", 0) == 0) host = host.substr(4);
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]" || host == "::1";
}

grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  // Reconnect soon after a collector restart; gRPC's default backoff grows to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  return args;
}

}  // namespace

absl::StatusOr<ClientCredentials> LoadClientCredentials(const std::string& token_file,
                                                        const std::string& tls_ca_file,
                                                        const std::string& tls_cert_file,
                                                        const std::string& tls_key_file) {
  ClientCredentials creds;
  if (!token_file.empty()) {
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

absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectCollector(const std::string& address,
                                                                const ClientCredentials& creds) {
  std::shared_ptr<grpc::ChannelCredentials> transport;
  if (creds.tls_ca.empty()) {
    if (!creds.token.empty() && !IsLoopback(address)) {
      return absl::FailedPreconditionError(
          "refusing to send a token unencrypted to " + address +
          ": give the collector's CA (--tls-ca / tls_ca) or use a loopback address");
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
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, transport, ChannelArgs(),
                                                                 std::move(interceptors));
}

std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address) {
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ChannelArgs());
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
