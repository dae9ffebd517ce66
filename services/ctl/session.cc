#include "services/ctl/session.h"

#include "proto/wire/call_errors.h"
#include "proto/wire/json.h"

namespace devtime::ctl {

int ReportError(const Session& session, const grpc::Status& status) {
  session.err << "devtimectl: " << wire::DescribeCallError(status, "") << "\n";
  bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  return unreachable ? 3 : 1;
}

void PrintJson(const Session& session, const google::protobuf::Message& message) {
  session.out << wire::ToJson(message) << "\n";
}

}  // namespace devtime::ctl
