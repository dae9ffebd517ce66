#include "proto/wire/exit_codes.h"

namespace devtime::wire {

ExitCode ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnavailable;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitPermission;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

// absl and gRPC share the canonical code numbers (both follow google.rpc.Code).
ExitCode ExitCodeFor(absl::StatusCode code) {
  return ExitCodeFor(static_cast<grpc::StatusCode>(static_cast<int>(code)));
}

const char* ExitCodeMeaning(int code) {
  switch (code) {
    case kExitOk:
      return "success";
    case kExitFailed:
      return "the answer is no";
    case kExitUsage:
      return "usage";
    case kExitUnavailable:
      return "unavailable";
    case kExitNotFound:
      return "not found";
    case kExitPermission:
      return "permission";
    case kExitDifferentSeries:
      return "different series";
    default:
      return "unknown";
  }
}

}  // namespace devtime::wire
