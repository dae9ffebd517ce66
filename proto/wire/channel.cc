#include "proto/wire/channel.h"

#include "proto/wire/limits.h"

namespace devtime::wire {

std::shared_ptr<grpc::Channel> MakeCollectorChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes + 64 * 1024));
  // Reconnect soon after a collector restart; gRPC's default backoff grows to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
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
