#include "services/collector/rpc/status.h"

#include <string>

#include "proto/wire/limits.h"

namespace devtime::collector {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status CheckListLimit(unsigned limit) {
  if (limit <= wire::kMaxListLimit) return absl::OkStatus();
  return absl::InvalidArgumentError("limit: at most " + std::to_string(wire::kMaxListLimit));
}

}  // namespace devtime::collector
