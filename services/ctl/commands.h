// devtimectl's commands: each calls the collector over gRPC and renders the answer as a
// table or as JSON (the proto's JSON form). Each returns the process exit code:
// 0 success, 1 the collector answered with an error, 2 bad usage, 3 collector unreachable.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "devtime/v1/collector.grpc.pb.h"

namespace devtime::ctl {

enum class Format { kTable, kJson };

struct Session {
  v1::Collector::StubInterface& stub;
  std::chrono::milliseconds timeout;
  std::ostream& out;
  std::ostream& err;
};

struct RunsListOptions {
  std::string model;
  std::string workload;
  std::string since;  // RFC 3339, date, or age ("7d"); empty = no bound
  unsigned limit = 0;
  Format format = Format::kTable;
};

// Prints the collector's error and returns the exit code for it (1, or 3 if unreachable).
int ReportError(const Session& session, const grpc::Status& status);

int RunsList(const Session& session, const RunsListOptions& options);
int RunsShow(const Session& session, const std::string& run_id, Format format);
int ModelsList(const Session& session, Format format);

// devtimectl compare RUN_A RUN_B: the op-by-op difference (run_diff.h).
int Compare(const Session& session, const std::string& before, const std::string& after);
// devtimectl check --run RUN --against BASELINE: exit 1 on a significant slowdown (a
// pre-merge gate), 0 otherwise.
struct CheckOptions;
int Check(const Session& session, const std::string& run, const std::string& baseline,
          const CheckOptions& options);

}  // namespace devtime::ctl
