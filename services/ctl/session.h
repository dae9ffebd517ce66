// How a devtimectl command talks to the collector: a Session (the stub, the deadline, the
// output streams) and the one pattern every command follows: call an RPC, on an error print
// it and return its exit code, else print the answer as JSON (the proto's JSON form) or as
// the command's own table. Exit codes: proto/wire/exit_codes.h (a failed call's code
// follows from its status: 3 unreachable, 4 not found, 5 permission, ...).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/limits.h"

namespace devtime::ctl {

// kIds: one id per line, for scripts (list commands only: cli.h AddListFormatOption).
enum class Format { kTable, kJson, kIds };

using Stub = v1::Collector::StubInterface;

struct Session {
  Stub& stub;
  std::chrono::milliseconds timeout;
  std::ostream& out;
  std::ostream& err;
  std::string target;  // --collector, for error messages
};

// Prints the collector's error and returns the exit code for it (wire::ExitCodeFor).
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

// A list RPC answered in pages (collector.proto: page_size, page_token, next_page_token),
// followed until `limit` items (0 = every item) or the last page, gathered in `*all` (the
// repeated field `items` of Response): one answer, as the collector gave before it paged.
template <typename Request, typename Response, typename Item>
grpc::Status InvokeAll(const Session& session, Rpc<Request, Response> rpc, Request request,
                       unsigned limit,
                       google::protobuf::RepeatedPtrField<Item>* (Response::*items)(),
                       Response* all) {
  all->Clear();
  google::protobuf::RepeatedPtrField<Item>* gathered = (all->*items)();
  auto wanted = [&] { return limit == 0 || static_cast<unsigned>(gathered->size()) < limit; };
  do {
    unsigned left = limit == 0 ? wire::kMaxListLimit : limit - gathered->size();
    request.set_page_size(std::min(left, wire::kMaxListLimit));
    Response page;
    if (auto status = Invoke(session, rpc, request, &page); !status.ok()) return status;
    for (Item& item : *(page.*items)()) {
      if (!wanted()) break;
      *gathered->Add() = std::move(item);
    }
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() && wanted());
  return grpc::Status::OK;
}

// The answer printed: as JSON with Format::kJson, else with print_table(response). The exit
// code: what print_table returns (0 when it returns nothing).
template <typename Response, typename PrintTable>
int PrintAnswer(const Session& session, const Response& response, Format format,
                PrintTable print_table) {
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

// Call, then PrintAnswer. The exit code: the error's, else PrintAnswer's.
template <typename Request, typename Response, typename PrintTable>
int CallAndPrint(const Session& session, Rpc<Request, Response> rpc, const Request& request,
                 Format format, PrintTable print_table) {
  Response response;
  if (auto failed = Call(session, rpc, request, &response)) return *failed;
  return PrintAnswer(session, response, format, print_table);
}

// InvokeAll, then PrintAnswer; on an error ReportError's exit code.
template <typename Request, typename Response, typename Item, typename PrintTable>
int CallAllAndPrint(const Session& session, Rpc<Request, Response> rpc, const Request& request,
                    unsigned limit, google::protobuf::RepeatedPtrField<Item>* (Response::*items)(),
                    Format format, PrintTable print_table) {
  Response response;
  if (auto status = InvokeAll(session, rpc, request, limit, items, &response); !status.ok()) {
    return ReportError(session, status);
  }
  return PrintAnswer(session, response, format, print_table);
}

}  // namespace devtime::ctl
