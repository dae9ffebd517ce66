#include "services/ctl/session.h"

#include "proto/wire/call_errors.h"
#include "proto/wire/exit_codes.h"
#include "proto/wire/json.h"

namespace devtime::ctl {

int ReportError(const Session& session, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    // The deadline covers connecting too (cli.cc), so this is all a user can be told.
    session.err << "devtimectl: no answer from collector " << session.target << " within --timeout "
                << std::chrono::duration_cast<std::chrono::seconds>(session.timeout).count()
                << " s: a slow link or a busy collector? give a longer --timeout ("
                << wire::Describe(status) << ")\n";
    return wire::ExitCodeFor(status.error_code());
  }
  session.err << "devtimectl: " << wire::DescribeCallError(status, session.target) << "\n";
  return wire::ExitCodeFor(status.error_code());
}

void PrintJson(const Session& session, const google::protobuf::Message& message) {
  session.out << wire::ToJson(message) << "\n";
}

}  // namespace devtime::ctl
