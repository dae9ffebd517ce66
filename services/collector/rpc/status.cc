#include "services/collector/rpc/status.h"

#include <string>

namespace devtime::collector {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace devtime::collector
