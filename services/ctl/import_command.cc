#include "services/ctl/import_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_format.h"
#include "agents/contract/run_summary_builder.h"
#include "agents/daemon/delivery_errors.h"
#include "agents/daemon/files.h"
#include "agents/daemon/uploader.h"
#include "agents/trace/trace_summary.h"
#include "nlohmann/json.hpp"
#include "proto/wire/time.h"
#include "proto/wire/validation.h"
#include "services/ctl/import_scan.h"
#include "services/ctl/progress.h"

namespace devtime::ctl {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::system_clock;

enum class Outcome { kStored, kDuplicate, kInvalid, kUnavailable, kFailed };

struct Result {
  Outcome outcome = Outcome::kFailed;
  std::string run_id;
  std::string series;  // model/workload
  Clock::time_point started_at;
  std::string reason;  // why invalid or failed; for a stored run, its quality gate's verdict
  std::string note;    // a warning about its labels (where its time came from)
};

struct Times {
  Clock::time_point started_at;
  Clock::time_point finished_at;
  std::string note;  // "" = nothing to warn about
};

std::optional<Times> TimesFromRunJson(const fs::path& capture) {
  std::ifstream in(capture / "run.json");
  if (!in) return std::nullopt;
  nlohmann::json run = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!run.is_object() || !run.contains("started_at") || !run["started_at"].is_string()) {
    return std::nullopt;
  }
  auto started = wire::ParseTimeOrAge(run["started_at"].get<std::string>(), Clock::now());
  if (!started.ok()) return std::nullopt;
  Times times{*started, *started};
  if (run.contains("finished_at") && run["finished_at"].is_string()) {
    auto finished = wire::ParseTimeOrAge(run["finished_at"].get<std::string>(), Clock::now());
    if (finished.ok()) times.finished_at = std::max(*finished, *started);
  }
  return times;
}

std::string TimeText(Clock::time_point t) { return wire::FormatTime(wire::ToTimestamp(t)); }

// The run's times, in this order (README, "import"): --at; else run.json's started_at (the
// harness's own clock when it ran); else the layout's `when` (a date the archive was filed
// under); else the capture's own clock (trace timestamps, a Neuron session's name); else when the
// capture was written, with a warning, since copying an archive changes it. A run.json more than a
// day from the path's date is used, and said.
absl::StatusOr<Times> RunTimes(const ImportOptions& options, const Capture& capture,
                               const trace::CaptureInfo& recorded) {
  if (!options.at.empty()) {
    auto at = wire::ParseTimeOrAge(options.at, Clock::now());
    if (!at.ok()) return absl::InvalidArgumentError("--at: " + std::string(at.status().message()));
    return Times{*at, *at, ""};
  }
  if (fs::is_directory(capture.path)) {
    if (auto times = TimesFromRunJson(capture.path)) {
      if (capture.when &&
          std::chrono::abs(times->started_at - *capture.when) > std::chrono::hours(24)) {
        times->note = "time from run.json, " + TimeText(times->started_at) + "; the path says " +
                      TimeText(*capture.when);
      }
      return *times;
    }
  }
  if (capture.when) return Times{*capture.when, *capture.when, ""};
  if (recorded.started_unix_ns && recorded.finished_unix_ns) {
    // The capture's own clock (the trace's timestamps, or the Neuron session's name): the
    // time `devtime-agent summarize` gives it. After the layout's `when`, which the user
    // declared; before the file's time, which a copy changes.
    const Clock::time_point started{std::chrono::nanoseconds(*recorded.started_unix_ns)};
    const Clock::time_point finished{std::chrono::nanoseconds(*recorded.finished_unix_ns)};
    return Times{started, std::max(started, finished), ""};
  }
  const Clock::time_point written = agent::ModificationTime(capture.path);
  return Times{written, written,
               "time from the file's modification time (no started_at in run.json, no date in "
               "the path, no clock in the trace): --at sets one"};
}

std::string Lookup(const std::map<std::string, std::string>& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? "" : it->second;
}

// Summarizes one capture into the RunSummary it would be stored as.
absl::StatusOr<v1::RunSummary> Prepare(const ImportOptions& options, const Capture& capture,
                                       std::string* quality, std::string* note) {
  auto summary = trace::Summarize(capture.path);
  if (!summary.ok()) return summary.status();
  auto times = RunTimes(options, capture, summary->capture);
  if (!times.ok()) return times.status();
  *note = times->note;
  agent::RunLabels labels;
  labels.job = "import";
  labels.model = options.model.empty() ? capture.model : options.model;
  labels.workload = options.workload.empty() ? capture.workload : options.workload;
  labels.fallback_workload = fs::path(capture.path).filename().string();
  labels.host = options.host.empty() ? Lookup(summary->environment, "host") : options.host;
  labels.started_at = times->started_at;
  labels.finished_at = times->finished_at;
  v1::RunSummary run = agent::BuildRunSummary(*summary, labels);
  auto id = ContentRunId(capture.path, run.identity().model(), run.identity().workload(),
                         labels.started_at);
  if (!id.ok()) return id.status();
  run.mutable_identity()->set_run_id(*id);
  if (absl::Status valid = wire::ValidateRun(run); !valid.ok()) return valid;
  if (summary->invalid_reason) *quality = "stored as INVALID: " + *summary->invalid_reason;
  return run;
}

// The agent's classifier of upload errors (delivery_errors.h), read for a one-shot import.
Outcome OutcomeOf(grpc::StatusCode code) {
  // The run id is taken by a run that differs in something other than its content, e.g.
  // the same capture imported from another copy of the archive (artifact paths differ).
  if (code == grpc::StatusCode::ALREADY_EXISTS) return Outcome::kDuplicate;
  const agent::Delivery delivery = agent::DeliveryOf(static_cast<absl::StatusCode>(code));
  if (delivery == agent::Delivery::kRefusedForGood) return Outcome::kInvalid;
  return delivery == agent::Delivery::kRetry ? Outcome::kUnavailable : Outcome::kFailed;
}

Result ImportOne(const ImportOptions& options, const Capture& capture, Stub* stub) {
  Result result;
  auto run = Prepare(options, capture, &result.reason, &result.note);
  if (!run.ok()) {
    result.outcome = Outcome::kInvalid;
    result.reason = std::string(run.status().message());
    return result;
  }
  result.run_id = run->identity().run_id();
  result.series = run->identity().model() + "/" + run->identity().workload();
  result.started_at = wire::FromTimestamp(run->started_at());
  if (stub == nullptr) {  // dry run
    result.outcome = Outcome::kStored;
    return result;
  }
  agent::UploadOptions upload;
  upload.retry_for = options.retry_for;
  auto ack = agent::Upload(*stub, *run, upload);
  if (!ack.ok()) {
    result.outcome = OutcomeOf(static_cast<grpc::StatusCode>(ack.status().code()));
    result.reason = std::string(ack.status().message());
    return result;
  }
  result.outcome = ack->duplicate() ? Outcome::kDuplicate : Outcome::kStored;
  return result;
}

// Imports every capture with `jobs` workers; results in the captures' order.
std::vector<Result> ImportAll(const ImportOptions& options, const std::vector<Capture>& captures,
                              Stub* stub, Progress& progress) {
  std::vector<Result> results(captures.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < captures.size(); i = next++) {
      results[i] = ImportOne(options, captures[i], stub);
      progress.Advance();
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t jobs = std::min<std::size_t>(
      captures.size(), options.jobs > 0 ? static_cast<std::size_t>(options.jobs) : hardware);
  std::vector<std::thread> workers;
  for (std::size_t w = 1; w < jobs; ++w) workers.emplace_back(work);
  work();
  for (auto& worker : workers) worker.join();
  return results;
}

// A dry run has no collector to tell what it already holds, but it knows what repeats itself.
void MarkRepeatsAsDuplicates(std::vector<Result>& results) {
  std::set<std::string> seen;
  for (Result& r : results) {
    if (r.outcome == Outcome::kStored && !seen.insert(r.run_id).second) {
      r.outcome = Outcome::kDuplicate;
    }
  }
}

const char* Verb(Outcome outcome, bool dry_run) {
  // By Outcome, as {what happened, what a dry run would do}.
  static constexpr const char* kVerbs[][2] = {{"stored", "would store"},
                                              {"already stored", "repeats"},
                                              {"invalid", "invalid"},
                                              {"unreachable", "unreachable"},
                                              {"failed", "failed"}};
  return kVerbs[static_cast<int>(outcome)][dry_run ? 1 : 0];
}

int Report(const ImportOptions& options, const std::vector<Capture>& captures,
           const std::vector<Result>& results, std::ostream& out) {
  std::map<Outcome, int> counts;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    ++counts[r.outcome];
    const bool listed =
        options.dry_run || r.outcome != Outcome::kStored || !r.reason.empty() || !r.note.empty();
    if (!listed) continue;
    out << absl::StrFormat("%-14s %s", Verb(r.outcome, options.dry_run), captures[i].path.string());
    if (!r.run_id.empty()) {
      google::protobuf::Timestamp at = wire::ToTimestamp(r.started_at);
      out << absl::StrFormat("  %s  %s  %s", r.run_id, r.series, wire::FormatTime(at));
    }
    if (!r.reason.empty()) out << "  (" << r.reason << ")";
    if (!r.note.empty()) out << "  (warning: " << r.note << ")";
    out << "\n";
  }
  out << absl::StrFormat(
      "%d captures: %d %s, %d %s, %d invalid", results.size(), counts[Outcome::kStored],
      options.dry_run ? "to store" : "stored", counts[Outcome::kDuplicate],
      options.dry_run ? "repeated" : "already stored", counts[Outcome::kInvalid]);
  const int unreachable = counts[Outcome::kUnavailable];
  const int failed = counts[Outcome::kFailed];
  if (unreachable > 0) out << absl::StrFormat(", %d not sent (collector unreachable)", unreachable);
  if (failed > 0) out << absl::StrFormat(", %d refused", failed);
  out << "\n";
  if (unreachable > 0) return 3;
  return counts[Outcome::kInvalid] + failed > 0 ? 1 : 0;
}

}  // namespace

int RunImport(const ImportOptions& options, Stub* stub, std::ostream& out, std::ostream& err,
              bool terminal) {
  auto layout = ParseImportLayout(options.layout);
  if (!layout.ok()) {
    err << "devtimectl import: --layout: " << layout.status().message() << "\n";
    return 2;
  }
  std::vector<fs::path> roots(options.roots.begin(), options.roots.end());
  auto captures = FindCaptures(roots, *layout);
  if (!captures.ok()) {
    err << "devtimectl import: " << captures.status().message() << "\n";
    return 2;
  }
  if (absl::Status labels =
          CheckLabels(*captures, options.layout, !options.model.empty(), !options.workload.empty());
      !labels.ok()) {
    err << "devtimectl import: " << labels.message() << "\n";
    return 2;
  }
  if (captures->empty()) {
    err << "devtimectl import: no profiler output below the given folders (a folder with "
           "trace.json, *.pt.trace.json[.gz], key_averages.json or a Neuron session, or a "
           ".json/.json.gz trace file)\n";
    return 1;
  }
  Progress progress(err, captures->size(), terminal, options.dry_run ? "summarizing" : "importing");
  std::vector<Result> results = ImportAll(options, *captures, stub, progress);
  progress.Finish();
  if (options.dry_run) MarkRepeatsAsDuplicates(results);
  return Report(options, *captures, results, out);
}

void AddImportCommand(CLI::App& app, CommandContext& context, std::function<int()>* run_offline) {
  auto options = std::make_shared<ImportOptions>();
  auto* import = app.add_subcommand(
      "import",
      "backfill history from archived profiler output: every capture below DIR..., summarized "
      "in parallel, stored once (the run id follows from the content)");
  import->add_option("dirs", options->roots, "archive folders (or single captures)")->required();
  import
      ->add_option("--layout", options->layout,
                   "what the path components below DIR are: model, workload, when (a date or\n"
                   "time such as 2026-11-24 or 20261124T0200), - to skip one")
      ->capture_default_str();
  import->add_option("--model", options->model, "model of every run (over the layout)");
  import->add_option("--workload", options->workload, "workload of every run (over the layout)");
  import->add_option("--host", options->host, "host of every run (default: the capture's own)");
  import->add_option("--at", options->at,
                     "start time of every run (default: run.json's started_at, else the\n"
                     "layout's when, else the trace's own clock, else the file's time, with\n"
                     "a warning)");
  import->add_option("--jobs,-j", options->jobs, "captures summarized at once (0 = one per core)")
      ->capture_default_str();
  import->add_flag("--dry-run", options->dry_run, "list what would be stored; send nothing");
  import->callback([options, &context, run_offline] {
    const bool terminal = isatty(STDERR_FILENO) != 0;
  if (options->dry_run) {
    *run_offline = [options, terminal] {
      return RunImport(*options, nullptr, std::cout, std::cerr, terminal);
    };
    return;
  }
  context.command = [options, terminal](const Session& session) {
    return RunImport(*options, &session.stub, session.out, session.err, terminal);
  };
});
}  // namespace devtime::ctl

}  // namespace devtime::ctl
