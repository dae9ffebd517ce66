#include "proto/wire/call_errors.h"

#include "proto/wire/channel.h"

namespace devtime::wire {
namespace {

// gRPC's words (chttp2) when the peer answers the HTTP/2 preface with an HTTP/1 response.
bool AnswersHttp1(const std::string& message) {
  return message.find("http1.x server") != std::string::npos ||
         message.find("Failed parsing HTTP/2") != std::string::npos;
}

}  // namespace

std::string DescribeCallError(const grpc::Status& status, const std::string& target) {
  const std::string described = Describe(status);
  const std::string where = target.empty() ? "the collector's address" : target;
  if (AnswersHttp1(status.error_message())) {
    return where +
           " answers HTTP/1 — is it the metrics port? the gRPC port is --listen (default "
           "50051) (" +
           described + ")";
  }
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return described;
  const std::string collector = target.empty() ? "collector" : "collector " + target;
  // The collector's own UNAVAILABLE while PostgreSQL is away (store/database.cc): it answered.
  if (status.error_message().find("database unavailable") != std::string::npos) {
    return collector +
           " answers, but its database is unavailable: is PostgreSQL running "
           "(deploy/quickstart.sh status)? (" +
           described + ")";
  }
  return collector +
         " unreachable: is devtime-collector running and listening there (deploy/quickstart.sh "
         "status)? is DEVTIME_COLLECTOR (--collector) right? (" +
         described + ")";
}

}  // namespace devtime::wire
