#include "services/ctl/trace_commands.h"

#include <memory>

#include "nlohmann/json.hpp"
#include "proto/wire/trace_links.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

constexpr char kNoneKept[] = "none kept (an agent keeps them when agent.yaml sets trace_store)";

nlohmann::json FilesJson(const v1::RunSummary& run) {
  nlohmann::json files = nlohmann::json::array();
  for (const v1::Artifact& a : run.artifacts()) {
    const wire::TraceOpening opening = wire::OpenWith(a);
    files.push_back({{"kind", a.kind()},
                     {"uri", a.uri()},
                     {"size_bytes", a.size_bytes()},
                     {"sha256", a.sha256()},
                     {"viewer", opening.viewer},
                     {"command", opening.command},
                     {"then", opening.then}});
  }
  return files;
}

void PrintFiles(std::ostream& out, const v1::RunSummary& run) {
  out << "run " << run.identity().run_id() << "  " << run.identity().model() << " / "
      << run.identity().workload() << "\n";
  if (run.artifacts().empty()) {
    out << "no files recorded for this run\n";
    return;
  }
  TextTable table({"kind", "bytes", "sha256", "uri"},
                  {TextTable::Align::kLeft, TextTable::Align::kRight});
  for (const v1::Artifact& a : run.artifacts()) {
    table.AddRow(
        {a.kind(), std::to_string(a.size_bytes()), a.sha256().empty() ? "-" : a.sha256(), a.uri()});
  }
  out << table.Render() << "\nopen with:\n";
  const auto lines = wire::OpeningLines(run.artifacts());
  if (lines.empty()) out << "  no viewer opens these files\n";
  for (const std::string& line : lines) out << "  " << line << "\n";
}

}  // namespace

int RunsTraces(const Session& session, const std::string& run, const RunScope& scope,
               Format format) {
  v1::GetRunRequest request;
  if (auto failed = ResolveRunId(session, run, scope, request.mutable_run_id())) return *failed;
  v1::GetRunResponse response;
  if (auto failed = Call(session, &Stub::GetRun, request, &response)) return *failed;
  if (format == Format::kJson) {
    nlohmann::json json = {{"run_id", response.run().identity().run_id()},
                           {"files", FilesJson(response.run())}};
    session.out << json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    PrintFiles(session.out, response.run());
  }
  return 0;
}

void PrintRegressionTraces(std::ostream& out, const v1::Regression& regression) {
  const char* label = "traces      ";
  bool any = false;
  for (const auto& [which, traces] : {std::pair{"last good: ", &regression.last_good_traces()},
                                      std::pair{"first bad: ", &regression.first_bad_traces()}}) {
    for (const std::string& line : wire::OpeningLines(*traces)) {
      out << label << which << line << "\n";
      label = "            ";
      any = true;
    }
  }
  if (!any) out << label << kNoneKept << "\n";
}

void AddRunTracesCommand(CLI::App* runs, CommandContext& context) {
  struct TracesOptions {
    std::string run;
    RunScope scope;
    Format format = Format::kTable;
  };
  auto options = std::make_shared<TracesOptions>();
  auto* traces = runs->add_subcommand(
      "traces", "where a run's trace files are kept, with their sha256 and how to open them");
  traces
      ->add_option("RUN", options->run,
                   "a run id, a unique prefix of one (8+ hex digits) or latest")
      ->required();
  AddRunScopeOptions(traces, &options->scope);
  AddFormatOption(traces, &options->format);
  OnParsed(traces, context, [options](const Session& s) {
    return RunsTraces(s, options->run, options->scope, options->format);
  });
}

}  // namespace devtime::ctl
