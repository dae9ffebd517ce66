#include "services/ctl/session.h"

#include "proto/wire/call_errors.h"
#include "proto/wire/exit_codes.h"
#include "proto/wire/json.h"

namespace devtime::ctl {

int ReportError(const Session& session, const grpc::Status& status) {
  session.err << "devtimectl: " << wire::DescribeCallError(status, session.target) << "\n";
  return wire::ExitCodeFor(status.error_code());
}

void PrintJson(const Session& session, const google::protobuf::Message& message) {
  session.out << wire::ToJson(message) << "\n";
}

}  // namespace devtime::ctl
