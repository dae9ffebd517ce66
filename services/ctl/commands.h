// devtimectl's run commands (runs list|show, models list, compare, check): each calls the
// collector over gRPC and renders the answer as a table or as JSON (session.h). Each returns
// the process exit code as session.h says.
#pragma once

#include <string>

#include "services/ctl/cli.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

struct RunsListOptions {
  std::string model;
  std::string workload;
  std::string since;     // RFC 3339, date, or age ("7d"); empty = no bound
  unsigned limit = 100;  // newest first; 0 = every run (the collector's pages are followed)
  Format format = Format::kTable;
};

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

// Register `runs list|show`, `models list`, `compare` and `check` on `app`.
void AddRunCommands(CLI::App& app, CommandContext& context);
void AddModelCommands(CLI::App& app, CommandContext& context);
void AddCompareCommand(CLI::App& app, CommandContext& context);
void AddCheckCommand(CLI::App& app, CommandContext& context);

}  // namespace devtime::ctl
