// devtimectl's run commands (runs list|show, models list, compare, check): each calls the
// collector over gRPC and renders the answer as a table or as JSON (session.h). Each returns
// the process exit code as session.h says.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "services/ctl/check_output.h"
#include "services/ctl/cli.h"
#include "services/ctl/run_diff.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

// The runs a typed run reference is looked up among: "latest" is the newest of them, and a
// prefix must name one of them (collector.proto ResolveRun). "" = any.
struct RunScope {
  std::string model;
  std::string workload;
  std::optional<std::string> instance_type;  // nullopt = any ("" = unknown only)
  std::string device;                        // "cpu", "cuda", "neuron"; "" = any
};

// What a RUN argument may be: a whole run id, a unique prefix of one (at least 8 hex digits,
// as compare prints them) or "latest". `*run_id` = the run id `ref` names: `ref` itself when
// it is a whole run id (the RPC that uses it checks it), else the collector's ResolveRun
// answer. Returns the exit code of a failure (already reported), nullopt on success.
std::optional<int> ResolveRunId(const Session& session, const std::string& ref,
                                const RunScope& scope, std::string* run_id);

// --model and --workload on `subcommand`, parsed into *scope, saying they choose among the
// runs that `latest` and prefixes name.
void AddRunScopeOptions(CLI::App* subcommand, RunScope* scope);

// The parts of a series identity a comparison may cross (--allow-different KEY, repeatable;
// run_diff.h IdentityKey). Any other difference refuses the comparison.
using AllowedDifferences = std::set<IdentityKey>;

// How compare and check find their two runs and keep them in one series. The run that is
// not `latest` is looked up first (the judged run for check, RUN_B for compare, when both
// are or neither is); `latest` is then the newest run of that run's series: its model,
// workload, instance type and device kind, each unless the scope names another or
// --allow-different the key. When that series has no run, the newest run of the scope is
// taken, and refused as a run of another series (unless allowed).
struct ComparisonScope {
  RunScope runs;  // --model, --workload, --instance-type, --device
  AllowedDifferences allowed;
};

struct RunsListOptions {
  std::string model;
  std::string workload;
  std::string since;     // RFC 3339, date, or age ("7d"); empty = no bound
  unsigned limit = 100;  // newest first; 0 = every run (the collector's pages are followed)
  Format format = Format::kTable;
  std::string source = "profile";  // or "monitor" (issue 24)
};

int RunsList(const Session& session, const RunsListOptions& options);
int RunsShow(const Session& session, const std::string& run, const RunScope& scope, Format format);
int ModelsList(const Session& session, Format format);

// devtimectl compare RUN_A RUN_B: the op-by-op difference (run_diff.h). Every RUN here is
// as ResolveRunId takes it; runs of different series are refused (exit 6) unless
// scope.allowed names every key in which they differ.
int Compare(const Session& session, const std::string& before, const std::string& after,
            const ComparisonScope& scope);
// devtimectl check --run RUN --against BASELINE: exit 1 on a significant slowdown (a
// pre-merge gate), 0 otherwise; 6 when the runs are of different series (as Compare).
// `format` chooses the text, a Markdown comment or a JUnit report (check_output.h); when
// there is no verdict (exit 2-6) the Markdown and JUnit formats still print a well-formed
// "could not check" document, the error going to stderr as always.
int Check(const Session& session, const std::string& run, const std::string& baseline,
          const CheckOptions& options, const ComparisonScope& scope, CheckFormat format);

// Register `runs list|show`, `models list`, `compare` and `check` on `app`.
void AddRunCommands(CLI::App& app, CommandContext& context);
void AddModelCommands(CLI::App& app, CommandContext& context);
void AddCompareCommand(CLI::App& app, CommandContext& context);
void AddCheckCommand(CLI::App& app, CommandContext& context);

}  // namespace devtime::ctl
