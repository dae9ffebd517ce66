// devtimectl report --model M [--html FILE]: one model's history, the latest run of each
// workload against its baseline, and its live regressions. Everything comes from the
// collector's gRPC API (ListModels, ListRuns, GetRun, ListRegressions); rendering is
// report_html.h. Without --html a short summary goes to stdout; with it the self-contained
// page is written to FILE and its path printed.
//
// A collector that does not serve regressions yet (ListRegressions UNIMPLEMENTED) still gets
// a report: without markers and table, and with a note saying why.
#pragma once

#include <string>

#include "services/ctl/commands.h"
#include "services/ctl/report_html.h"

namespace devtime::ctl {

struct ReportOptions {
  std::string model;      // required
  std::string html_path;  // "" = text summary on stdout
  std::string since;      // only runs started since (as runs list --since); "" = no bound
  unsigned limit = 1000;  // runs listed, newest first, over all workloads (at most 10,000)
};

// Exit codes as in commands.h; 1 also when the model has no runs, 2 when FILE cannot be
// written.
int Report(const Session& session, const ReportOptions& options);

// What the page shows, from the collector. The baseline of a series is the last good run of
// its newest live regression when there is one, else its previous OK run.
grpc::Status GatherReport(const Session& session, const ReportOptions& options,
                          ModelReport* report);

}  // namespace devtime::ctl
