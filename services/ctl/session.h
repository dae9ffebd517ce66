// How a devtimectl command talks to the collector: a Session (the stub, the deadline, the
// output streams) and the one pattern every command follows: call an RPC, on an error print
// it and return its exit code, else print the answer as JSON (the proto's JSON form) or as
// the command's own table. Exit codes: 0 success, 1 the collector answered with an error,
// 2 bad usage, 3 collector unreachable.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <type_traits>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"

namespace devtime::ctl {

enum class Format { kTable, kJson };

using Stub = v1::Collector::StubInterface;

struct Session {
  Stub& stub;
  std::chrono::milliseconds timeout;
  std::ostream& out;
  std::ostream& err;
};

// Prints the collector's error and returns the exit code for it (1, or 3 if unreachable).
int ReportError(const Session& session, const grpc::Status& status);

// The answer as pretty-printed JSON and a newline on session.out.
void PrintJson(const Session& session, const google::protobuf::Message& message);

// A unary RPC of the collector, e.g. &Stub::ListRuns.
template <typename Request, typename Response>
using Rpc = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&, Response*);

// Calls `rpc` with a deadline session.timeout from now; the status is the caller's to handle.
template <typename Request, typename Response>
grpc::Status Invoke(const Session& session, Rpc<Request, Response> rpc, const Request& request,
                    Response* response) {
  auto context = wire::MakeContext(session.timeout);
  return (session.stub.*rpc)(context.get(), request, response);
}

// Invoke, and on an error ReportError: its exit code; nullopt when the call succeeded.
template <typename Request, typename Response>
std::optional<int> Call(const Session& session, Rpc<Request, Response> rpc, const Request& request,
                        Response* response) {
  if (auto status = Invoke(session, rpc, request, response); !status.ok()) {
    return ReportError(session, status);
  }
  return std::nullopt;
}

// Call, then print the answer: as JSON with Format::kJson, else with print_table(response).
// The exit code: the error's, else what print_table returns (0 when it returns nothing).
template <typename Request, typename Response, typename PrintTable>
int CallAndPrint(const Session& session, Rpc<Request, Response> rpc, const Request& request,
                 Format format, PrintTable print_table) {
  Response response;
  if (auto failed = Call(session, rpc, request, &response)) return *failed;
  if (format == Format::kJson) {
    PrintJson(session, response);
    return 0;
  }
  if constexpr (std::is_void_v<decltype(print_table(response))>) {
    print_table(response);
    return 0;
  } else {
    return print_table(response);
  }
}

}  // namespace devtime::ctl
