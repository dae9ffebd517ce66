// `devtimectl import DIR...`: backfill history from an archive of past profiler output.
// Finds the captures (import_scan.h), summarizes them in parallel as `devtime-agent summarize`
// would, gives each the run id its content determines — so a re-import stores nothing twice
// — and uploads them (acknowledged after commit, retried while the collector is away).
// `--dry-run` lists what it would store without a collector. Progress goes to stderr (a bar
// on a terminal, plain lines otherwise); the end says how many were stored, were already
// there, or were invalid, and why.
// Exit codes: 0 every capture stored or already there, 1 some were invalid or refused,
// 2 bad usage (a folder that does not exist, a bad --layout), 3 collector unreachable.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "services/ctl/cli.h"

namespace devtime::ctl {

struct ImportOptions {
  std::vector<std::string> roots;
  std::string layout = "model/workload/when";  // import_scan.h: ImportLayout
  std::string model;                           // flags win over the layout
  std::string workload;
  std::string host;  // "" = the capture's environment "host", else this machine
  std::string at;    // "" = run.json's times, else the layout's `when`, else the files' time
  int jobs = 0;      // 0 = one per hardware thread
  bool dry_run = false;
  std::chrono::seconds retry_for{60};  // per run, while the collector is unreachable
};

// Runs the import; `stub` may be null only for a dry run. `terminal` chooses the progress bar.
int RunImport(const ImportOptions& options, Stub* stub, std::ostream& out, std::ostream& err,
              bool terminal);

// Registers `import`. A dry run needs no collector: it is left in *run_offline; any other
// import becomes context.command.
void AddImportCommand(CLI::App& app, CommandContext& context, std::function<int()>* run_offline);

}  // namespace devtime::ctl
