#include "services/ctl/commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "proto/wire/exit_codes.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "proto/wire/validation.h"
#include "services/ctl/check_output.h"
#include "services/ctl/run_diff.h"
#include "services/ctl/table.h"
#include "services/ctl/trace_commands.h"

namespace devtime::ctl {
namespace {

using Align = TextTable::Align;

std::string StatusCell(const v1::RunInfo& info) {
  std::string text = wire::RunStatusName(info.status());
  if (info.status() != v1::RUN_STATUS_OK && !info.status_reason().empty()) {
    text += " (" + info.status_reason().substr(0, 60) + ")";
  }
  return text;
}

bool IsCpu(const v1::RunIdentity& id) { return id.device_kind() == v1::DEVICE_KIND_CPU; }

struct StepSpread {
  double mean = 0, min = 0, max = 0;
  bool present = false;
};

StepSpread Spread(const google::protobuf::RepeatedField<double>& samples) {
  StepSpread s;
  if (samples.empty()) return s;
  s.present = true;
  // Self-CPU samples may dip a few µs below 0 from the profiler's rounding (the wire keeps them
  // exact so the mean is total ÷ steps); a time shown on its own is never negative.
  s.min = std::max(0.0, *std::min_element(samples.begin(), samples.end()));
  s.max = *std::max_element(samples.begin(), samples.end());
  for (double v : samples) s.mean += v;
  s.mean /= samples.size();
  return s;
}

void PrintRunHeader(const Session& session, const v1::GetRunResponse& response) {
  const auto& run = response.run();
  const auto& id = run.identity();
  auto& out = session.out;
  out << "run       " << id.run_id() << "\n"
      << "model     " << id.model() << " / " << id.workload() << "\n"
      << "host      " << id.host()
      << (id.instance_type().empty() ? "" : " (" + id.instance_type() + ")") << ", device "
      << wire::DeviceKindName(id.device_kind()) << "\n";
  if (!id.job().empty()) out << "job       " << id.job() << "\n";
  out << "started   " << wire::FormatTime(run.started_at()) << "\n"
      << "status    " << StatusCell(response.info()) << "\n";
  const char* basis = IsCpu(id) ? "self CPU" : "device";
  out << "per step  " << ScaledTime(response.info().device_us_per_step()) << " " << basis
      << " time over " << response.info().step_count() << " steps\n";
  if (!run.environment().empty()) {
    std::vector<std::pair<std::string, std::string>> env(run.environment().begin(),
                                                         run.environment().end());
    std::sort(env.begin(), env.end());
    out << "env      ";
    for (const auto& [key, value] : env) out << " " << key << "=" << value;
    out << "\n";
  }
  out << "\n";
}

void PrintOperators(const Session& session, const v1::RunSummary& run) {
  bool cpu = IsCpu(run.identity());
  auto self_time = [cpu](const v1::OpStat& op) {
    return cpu ? op.self_cpu_us() : op.self_device_us();
  };
  std::vector<const v1::OpStat*> ops;
  double total = 0;
  for (const auto& op : run.ops()) {
    ops.push_back(&op);
    total += self_time(op);
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [&](auto* a, auto* b) { return self_time(*a) > self_time(*b); });
  std::string unit = cpu ? "self CPU" : "self device";
  TextTable table({"operator", "calls", unit, "%", "step mean", "step min", "step max",
                   cpu ? "CPU total" : "device total"},
                  {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
                   Align::kRight, Align::kRight, Align::kRight});
  for (const auto* op : ops) {
    StepSpread s = Spread(op->step_self_device_us());
    auto cell = [&](double v) { return s.present ? ScaledTime(v) : std::string("-"); };
    table.AddRow({op->name(), std::to_string(op->calls()), ScaledTime(self_time(*op)),
                  total > 0 ? FormatPercent(self_time(*op) / total) : "-", cell(s.mean),
                  cell(s.min), cell(s.max),
                  ScaledTime(cpu ? op->total_cpu_us() : op->total_device_us())});
  }
  session.out << table.Render() << "total " << unit << ": " << ScaledTime(total) << " in "
              << run.ops_size() << " operators\n";
}

const char* JoinMethodName(v1::DeviceJoinMethod method) {
  switch (method) {
    case v1::DEVICE_JOIN_METHOD_ID:
      return "id";
    case v1::DEVICE_JOIN_METHOD_ORDER:
      return "order";
    case v1::DEVICE_JOIN_METHOD_ID_AND_ORDER:
      return "id+order";
    default:
      return "none";
  }
}

// "NeuronCore join: order, 12 executions 4.710 ms; 0 unjoined": how the system trace's
// executions reached the operators, so a reader knows how far to trust the per-op device time.
std::string JoinLine(const v1::DeviceJoinCoverage& join) {
  auto executions = [](uint64_t count, double us) {
    return std::to_string(count) + " executions " + ScaledTime(us);
  };
  std::string line = std::string("NeuronCore join: ") + JoinMethodName(join.method());
  switch (join.method()) {
    case v1::DEVICE_JOIN_METHOD_ID:
      line += ", " + executions(join.by_id_executions(), join.by_id_us());
      break;
    case v1::DEVICE_JOIN_METHOD_ORDER:
      line += ", " + executions(join.by_order_executions(), join.by_order_us());
      break;
    case v1::DEVICE_JOIN_METHOD_ID_AND_ORDER:
      line += ", " + executions(join.by_id_executions(), join.by_id_us()) + " by id, " +
              executions(join.by_order_executions(), join.by_order_us()) + " by order";
      break;
    default:
      break;
  }
  line += "; " + std::to_string(join.unjoined_executions()) + " unjoined";
  if (join.unjoined_executions() > 0) line += " (" + ScaledTime(join.unjoined_us()) + ")";
  return line;
}

// What the profile says beyond the operator table: the device time no operator launched, how a
// Neuron system trace was joined, the kernels by device time, and the capture warnings.
void PrintDeviceDetails(const Session& session, const v1::RunSummary& run) {
  auto& out = session.out;
  if (!IsCpu(run.identity())) {
    out << "device time total " << ScaledTime(run.device_total_us()) << " (unattributed "
        << ScaledTime(run.unattributed_device_us()) << ")\n";
  }
  if (run.has_device_join()) out << JoinLine(run.device_join()) << "\n";
  if (!run.kernels().empty()) {
    TextTable table({"kernel", "calls", "device"}, {Align::kLeft, Align::kRight, Align::kRight});
    for (const auto& kernel : run.kernels()) {
      table.AddRow({kernel.name(), std::to_string(kernel.calls()), ScaledTime(kernel.device_us())});
    }
    out << "\ntop kernels\n" << table.Render();
  }
  if (!run.warnings().empty()) {
    out << "\nwarnings\n";
    for (const auto& warning : run.warnings()) {
      out << "  [" << warning.kind() << "] " << warning.message() << "\n";
    }
  }
}

// Issue 24: neuron-monitor windows (runs list --source monitor), one per host, app, window.
void PrintMonitorRuns(const Session& session, const v1::ListRunsResponse& response) {
  TextTable table(
      {"run id", "window (UTC)", "model", "workload", "host", "app", "executions", "errors",
       "device p50", "device p99", "total p99", "util"},
      {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft,
       Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& run : response.runs()) {
    const auto& id = run.identity();
    const auto& m = run.monitor();
    uint64_t errors = 0;
    for (const auto& [kind, count] : m.errors()) errors += count;
    char util[16];
    std::snprintf(util, sizeof util, "%.0f%%", m.neuroncore_utilization_pct());
    table.AddRow({id.run_id(), wire::FormatTime(m.window_start()), id.model(), id.workload(),
                  id.host(), m.runtime_tag(), std::to_string(m.executions()),
                  std::to_string(errors), ScaledTime(m.device_p50_us()),
                  ScaledTime(m.device_p99_us()), ScaledTime(m.total_p99_us()), util});
  }
  session.out << (table.empty() ? "no monitor windows match\n" : table.Render());
}

void PrintRuns(const Session& session, const v1::ListRunsResponse& response, Format format) {
  if (format == Format::kIds) {
    for (const auto& run : response.runs()) session.out << run.identity().run_id() << "\n";
    return;
  }
  if (!response.runs().empty() && response.runs(0).source() == v1::RUN_SOURCE_MONITOR) {
    PrintMonitorRuns(session, response);
    return;
  }
  TextTable table({"run id", "started (UTC)", "model", "workload", "instance", "device", "status",
                   "ops", "steps", "time/step"},
                  {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft,
                   Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& run : response.runs()) {
    const auto& id = run.identity();
    table.AddRow({id.run_id(), wire::FormatTime(run.started_at()), id.model(), id.workload(),
                  id.instance_type().empty() ? "-" : id.instance_type(),
                  wire::DeviceKindName(id.device_kind()), StatusCell(run),
                  std::to_string(run.op_count()), std::to_string(run.step_count()),
                  ScaledTime(run.device_us_per_step())});
  }
  session.out << (table.empty() ? "no runs match\n" : table.Render());
}

void PrintModels(const Session& session, const v1::ListModelsResponse& response) {
  TextTable table({"model", "runs", "last run (UTC)", "workloads"},
                  {Align::kLeft, Align::kRight, Align::kLeft, Align::kLeft});
  for (const auto& model : response.models()) {
    std::string workloads;
    for (const auto& w : model.workloads()) workloads += (workloads.empty() ? "" : ", ") + w;
    table.AddRow({model.model(), std::to_string(model.run_count()),
                  wire::FormatTime(model.last_run_at()), workloads});
  }
  session.out << (table.empty() ? "no models yet: upload a run first\n" : table.Render());
}

}  // namespace

namespace {

v1::ResolveRunRequest ResolveRequest(const std::string& ref, const RunScope& scope) {
  v1::ResolveRunRequest request;
  request.set_ref(ref);
  request.set_model(scope.model);
  request.set_workload(scope.workload);
  if (scope.instance_type) request.set_instance_type(*scope.instance_type);
  if (!scope.device.empty()) request.set_device_kind(wire::DeviceKindFromName(scope.device));
  return request;
}

}  // namespace

std::optional<int> ResolveRunId(const Session& session, const std::string& ref,
                                const RunScope& scope, std::string* run_id) {
  if (wire::IsCanonicalUuid(ref)) {
    *run_id = ref;
    return std::nullopt;
  }
  const v1::ResolveRunRequest request = ResolveRequest(ref, scope);
  v1::RunInfo run;
  if (auto failed = Call(session, &Stub::ResolveRun, request, &run)) return failed;
  *run_id = run.identity().run_id();
  return std::nullopt;
}

void AddRunScopeOptions(CLI::App* subcommand, RunScope* scope) {
  subcommand->add_option("--model", scope->model,
                         "with latest or a run id prefix: only runs of this model");
  subcommand->add_option("--workload", scope->workload,
                         "with latest or a run id prefix: only runs of this workload");
}

int RunsList(const Session& session, const RunsListOptions& options) {
  v1::ListRunsRequest request;
  request.set_model(options.model);
  request.set_workload(options.workload);
  if (options.source != "profile") request.set_source(options.source);
  if (!options.since.empty()) {
    auto since = wire::ParseTimeOrAge(options.since, wire::Clock::now());
    if (!since.ok()) {
      session.err << "devtimectl: --since: " << since.status().message() << "\n";
      return 2;
    }
    *request.mutable_since() = wire::ToTimestamp(*since);
  }
  return CallAllAndPrint(
      session, &Stub::ListRuns, request, options.limit, &v1::ListRunsResponse::mutable_runs,
      options.format,
      [&](const v1::ListRunsResponse& response) { PrintRuns(session, response, options.format); });
}

int RunsShow(const Session& session, const std::string& run, const RunScope& scope, Format format) {
  v1::GetRunRequest request;
  if (auto failed = ResolveRunId(session, run, scope, request.mutable_run_id())) return *failed;
  return CallAndPrint(session, &Stub::GetRun, request, format,
                      [&](const v1::GetRunResponse& response) {
                        PrintRunHeader(session, response);
                        PrintOperators(session, response.run());
                        PrintDeviceDetails(session, response.run());
                      });
}

int ModelsList(const Session& session, Format format) {
  return CallAndPrint(
      session, &Stub::ListModels, {}, format,
      [&](const v1::ListModelsResponse& response) { PrintModels(session, response); });
}

namespace {

std::optional<int> FetchRun(const Session& session, const std::string& run_id,
                            v1::GetRunResponse* into) {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return Call(session, &Stub::GetRun, request, into);
}

// `ref` (as ResolveRunId takes it) looked up in `scope` and fetched, or the exit code of
// the failure (already reported).
std::optional<int> FetchRef(const Session& session, const std::string& ref, const RunScope& scope,
                            v1::GetRunResponse* into) {
  std::string run_id;
  if (auto failed = ResolveRunId(session, ref, scope, &run_id)) return failed;
  return FetchRun(session, run_id, into);
}

// The runs `latest` is looked up among when it is compared with `anchor`: the anchor's
// series, except where the user named another value or allowed the key to differ.
RunScope SeriesScope(const v1::RunIdentity& anchor, const ComparisonScope& scope) {
  auto pinned = [&scope](IdentityKey key) { return !scope.allowed.contains(key); };
  RunScope series = scope.runs;
  if (series.model.empty() && pinned(IdentityKey::kModel)) series.model = anchor.model();
  if (series.workload.empty() && pinned(IdentityKey::kWorkload)) {
    series.workload = anchor.workload();
  }
  if (!series.instance_type && pinned(IdentityKey::kInstanceType)) {
    series.instance_type = anchor.instance_type();
  }
  if (series.device.empty() && pinned(IdentityKey::kDevice)) {
    series.device = wire::DeviceKindName(anchor.device_kind());
  }
  return series;
}

// "model M, workload W, instance type T, device D": the parts of `scope` that are set.
std::string ScopeText(const RunScope& scope) {
  std::vector<std::string> parts;
  if (!scope.model.empty()) parts.push_back("model " + scope.model);
  if (!scope.workload.empty()) parts.push_back("workload " + scope.workload);
  if (scope.instance_type) {
    parts.push_back("instance type " +
                    (scope.instance_type->empty() ? "unknown" : *scope.instance_type));
  }
  if (!scope.device.empty()) parts.push_back("device " + scope.device);
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text.empty() ? "any series" : text;
}

// The two runs of a comparison (ComparisonScope says how they are found). `note` says
// when `latest` found no run of the other run's series.
struct RunPair {
  v1::GetRunResponse before;  // the baseline
  v1::GetRunResponse after;   // the run judged
  std::string note;
};

// `latest` of the anchor's series but the anchor itself, fetched; when that series has no
// other run, the newest run of the scope, which the identity check then refuses, with a
// note saying why it was taken.
std::optional<int> FetchLatestLike(const Session& session, const v1::RunIdentity& anchor,
                                   const ComparisonScope& scope, v1::GetRunResponse* into,
                                   std::string* note) {
  const RunScope series = SeriesScope(anchor, scope);
  v1::ResolveRunRequest request = ResolveRequest("latest", series);
  request.set_except_run_id(anchor.run_id());
  v1::RunInfo found;
  auto status = Invoke(session, &Stub::ResolveRun, request, &found);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    *note = "latest: no other run of " + ScopeText(series) +
            " is stored, so it named the newest of any series";
    request = ResolveRequest("latest", scope.runs);
    request.set_except_run_id(anchor.run_id());
    status = Invoke(session, &Stub::ResolveRun, request, &found);
  }
  if (!status.ok()) return ReportError(session, status);
  return FetchRun(session, found.identity().run_id(), into);
}

// Both runs; the one that is not `latest` first (the judged run when both are or neither
// is), then the other in its series when it is `latest`. The exit code of a failure
// (already reported), nullopt on success.
std::optional<int> FetchComparedRuns(const Session& session, const std::string& before,
                                     const std::string& after, const ComparisonScope& scope,
                                     RunPair* pair) {
  const bool before_first = after == "latest" && before != "latest";
  const std::string& anchor_ref = before_first ? before : after;
  const std::string& other_ref = before_first ? after : before;
  v1::GetRunResponse* anchor = before_first ? &pair->before : &pair->after;
  v1::GetRunResponse* other = before_first ? &pair->after : &pair->before;
  if (auto failed = FetchRef(session, anchor_ref, scope.runs, anchor)) return failed;
  if (other_ref == "latest") {
    return FetchLatestLike(session, anchor->run().identity(), scope, other, &pair->note);
  }
  return FetchRef(session, other_ref, scope.runs, other);
}

// "rmsnorm/fused trn1.2xlarge neuron 2026-11-25T02:00:00Z (b87ae65c)": a run with its
// series, so both sides of a comparison say what they are.
std::string Label(const v1::GetRunResponse& run) {
  const auto& id = run.run().identity();
  return SeriesText(id) + " " + wire::FormatTime(run.run().started_at()) + " (" +
         id.run_id().substr(0, 8) + ")";
}

// The identity differences of the pair that `allowed` does not name.
std::vector<IdentityDifference> RefusedDifferences(const RunPair& pair,
                                                   const AllowedDifferences& allowed) {
  std::vector<IdentityDifference> refused;
  for (auto& d : IdentityDifferences(pair.before.run().identity(), pair.after.run().identity())) {
    if (!allowed.contains(d.key)) refused.push_back(std::move(d));
  }
  return refused;
}

// The differences the comparison crosses because they were allowed.
std::vector<IdentityDifference> CrossedDifferences(const RunPair& pair) {
  return IdentityDifferences(pair.before.run().identity(), pair.after.run().identity());
}

// Says why runs of different series are not compared and how to compare them anyway;
// returns kExitDifferentSeries.
int RefuseAcrossSeries(const Session& session, const std::string& command, const char* before_role,
                       const char* after_role, const RunPair& pair,
                       const std::vector<IdentityDifference>& refused) {
  auto& err = session.err;
  err << "devtimectl: " << command << ": the runs are of different series ("
      << DifferencesText(refused) << "); refused:\n"
      << "  " << before_role << " " << Label(pair.before) << "\n"
      << "  " << after_role << " " << Label(pair.after) << "\n";
  if (!pair.note.empty()) err << "  (" << pair.note << ")\n";
  for (const auto& d : refused) {
    if (d.key == IdentityKey::kDevice && (d.before == "cpu" || d.after == "cpu")) {
      err << "A CPU-only run measures self CPU time, not device time: a CPU fallback is "
             "never a speed-up.\n";
    }
  }
  err << "Compare runs of one series, or name each key that may differ:";
  for (const auto& d : refused) err << " --allow-different " << IdentityKeyName(d.key);
  err << "\n";
  return wire::kExitDifferentSeries;
}

// "across series (--allow-different): ..." for the text outputs; "" within one series.
std::string CrossedLine(const RunPair& pair) {
  auto crossed = CrossedDifferences(pair);
  if (crossed.empty()) return "";
  return "across series (--allow-different): " + DifferencesText(crossed) + "\n";
}

// Both runs of a check, or a failure's exit code with what the user was told.
struct CheckRuns {
  RunPair pair;
  std::optional<int> failed;
  std::string errors;  // what went to stderr
};

CheckRuns FetchCheckedRuns(const Session& session, const std::string& run,
                           const std::string& baseline, const ComparisonScope& scope) {
  CheckRuns result;
  std::ostringstream errors;
  const Session recorded{session.stub, session.timeout, session.out, errors, session.target};
  result.failed = FetchComparedRuns(recorded, baseline, run, scope, &result.pair);
  if (!result.failed) {
    if (auto refused = RefusedDifferences(result.pair, scope.allowed); !refused.empty()) {
      result.failed =
          RefuseAcrossSeries(recorded, "check", "baseline", "run     ", result.pair, refused);
    }
  }
  result.errors = errors.str();
  session.err << result.errors;
  return result;
}

// The "could not check" document of `format` for a check that failed with `runs.failed`.
std::string FailureDocument(const std::string& run, const std::string& baseline,
                            const CheckRuns& runs, CheckFormat format) {
  CheckFailure failure{.run_ref = run, .baseline_ref = baseline, .exit_code = *runs.failed};
  if (runs.pair.after.has_run()) {
    failure.series = SeriesText(runs.pair.after.run().identity());
    failure.basis = BasisOf(runs.pair.after.run().identity());
  }
  failure.reason = runs.errors;
  const std::string prefix = "devtimectl: ";
  if (failure.reason.starts_with(prefix)) failure.reason.erase(0, prefix.size());
  while (!failure.reason.empty() && failure.reason.back() == '\n') failure.reason.pop_back();
  return format == CheckFormat::kJunit ? RenderCheckFailureJunit(failure)
                                       : RenderCheckFailureMarkdown(failure);
}

}  // namespace

int Compare(const Session& session, const std::string& before, const std::string& after,
            const ComparisonScope& scope) {
  RunPair pair;
  if (auto failed = FetchComparedRuns(session, before, after, scope, &pair)) return *failed;
  if (auto refused = RefusedDifferences(pair, scope.allowed); !refused.empty()) {
    return RefuseAcrossSeries(session, "compare", "before", "after ", pair, refused);
  }
  session.out << "before " << Label(pair.before) << "\nafter  " << Label(pair.after) << "\n"
              << CrossedLine(pair) << RenderDiff(DiffRuns(pair.before.run(), pair.after.run()));
  return 0;
}

int Check(const Session& session, const std::string& run, const std::string& baseline,
          const CheckOptions& options, const ComparisonScope& scope, CheckFormat format) {
  const CheckRuns runs = FetchCheckedRuns(session, run, baseline, scope);
  if (runs.failed) {
    if (format != CheckFormat::kText) {
      session.out << FailureDocument(run, baseline, runs, format);
    }
    return *runs.failed;
  }
  const RunPair& pair = runs.pair;
  CheckVerdict verdict{.series = SeriesText(pair.after.run().identity()),
                       .run = Label(pair.after),
                       .baseline = Label(pair.before),
                       .run_id = pair.after.run().identity().run_id(),
                       .baseline_id = pair.before.run().identity().run_id(),
                       .crossed = CrossedDifferences(pair),
                       .diff = DiffRuns(pair.before.run(), pair.after.run()),
                       .options = options};
  verdict.regression = IsRegression(verdict.diff, options);
  switch (format) {
    case CheckFormat::kMarkdown:
      session.out << RenderCheckMarkdown(verdict);
      break;
    case CheckFormat::kJunit:
      session.out << RenderCheckJunit(verdict);
      break;
    case CheckFormat::kText:
      session.out << (verdict.regression ? "REGRESSION" : "OK") << ": " << verdict.run
                  << " against " << verdict.baseline << "\n"
                  << CrossedLine(pair) << RenderDiff(verdict.diff, 10);
      break;
  }
  return verdict.regression ? wire::kExitFailed : wire::kExitOk;
}

namespace {

// How every RUN argument is described in --help.
constexpr char kRunHelp[] = "a run id, a unique prefix of one (8+ hex digits) or latest";

}  // namespace

void AddRunCommands(CLI::App& app, CommandContext& context) {
  auto* runs = app.add_subcommand("runs", "stored profiling runs");
  runs->require_subcommand(1);
  auto list = std::make_shared<RunsListOptions>();
  auto* runs_list = runs->add_subcommand("list", "list runs, newest first");
  runs_list->add_option("--model", list->model, "only this model");
  runs_list->add_option("--workload", list->workload, "only this workload");
  runs_list->add_option("--since", list->since,
                        "only runs started since: 2026-11-01, 2026-11-01T02:00:00Z or an age "
                        "like 7d, 12h");
  runs_list->add_option("--limit", list->limit, "at most this many runs (default 100, 0 = all)");
  runs_list
      ->add_option("--source", list->source,
                   "profile: profiled runs (default); monitor: neuron-monitor windows, one per "
                   "host, application and window")
      ->check(CLI::IsMember({"profile", "monitor"}));
  AddListFormatOption(runs_list, &list->format);
  OnParsed(runs_list, context, [list](const Session& s) { return RunsList(s, *list); });

  struct ShowOptions {
    std::string run;
    RunScope scope;
    Format format = Format::kTable;
  };
  auto show = std::make_shared<ShowOptions>();
  auto* runs_show = runs->add_subcommand("show", "one run with its operator table");
  runs_show->add_option("RUN", show->run, kRunHelp)->required();
  AddRunScopeOptions(runs_show, &show->scope);
  AddFormatOption(runs_show, &show->format);
  OnParsed(runs_show, context,
           [show](const Session& s) { return RunsShow(s, show->run, show->scope, show->format); });
  AddRunTracesCommand(runs, context);
}

void AddModelCommands(CLI::App& app, CommandContext& context) {
  auto* models = app.add_subcommand("models", "models with stored runs");
  models->require_subcommand(1);
  auto format = std::make_shared<Format>(Format::kTable);
  auto* models_list = models->add_subcommand("list", "list models and their workloads");
  AddFormatOption(models_list, format.get());
  OnParsed(models_list, context, [format](const Session& s) { return ModelsList(s, *format); });
}

namespace {

// --model, --workload, --instance-type, --device and --allow-different (into `allowed`,
// names checked; ToAllowed turns them into keys once parsed).
void AddComparisonScopeOptions(CLI::App* command, ComparisonScope* scope,
                               std::vector<std::string>* allowed) {
  AddRunScopeOptions(command, &scope->runs);
  command->add_option_function<std::string>(
      "--instance-type", [scope](const std::string& type) { scope->runs.instance_type = type; },
      "with latest or a run id prefix: only runs on this instance type (latest defaults to "
      "the other run's series)");
  command
      ->add_option("--device", scope->runs.device,
                   "with latest or a run id prefix: only runs of this device kind (cpu, cuda, "
                   "neuron)")
      ->transform(CLI::IsMember({"cpu", "cuda", "neuron"}, CLI::ignore_case));
  std::vector<std::string> keys;
  for (IdentityKey key : kIdentityKeys) keys.push_back(IdentityKeyName(key));
  command
      ->add_option("--allow-different", *allowed,
                   "compare runs of different series anyway, differing in this key: model, "
                   "workload, instance-type or device (repeatable; both sides are labelled)")
      ->transform(CLI::IsMember(keys, CLI::ignore_case))
      ->delimiter(',')
      ->allow_extra_args(false);
}

AllowedDifferences ToAllowed(const std::vector<std::string>& names) {
  AllowedDifferences allowed;
  for (IdentityKey key : kIdentityKeys) {
    if (std::find(names.begin(), names.end(), IdentityKeyName(key)) != names.end()) {
      allowed.insert(key);
    }
  }
  return allowed;
}

}  // namespace

void AddCompareCommand(CLI::App& app, CommandContext& context) {
  struct Options {
    std::string before, after;
    ComparisonScope scope;
    std::vector<std::string> allowed;
  };
  auto options = std::make_shared<Options>();
  auto* compare = app.add_subcommand("compare", "op-by-op difference of two runs (before, after)");
  compare
      ->add_option("RUN_A", options->before, std::string("the earlier (baseline) run: ") + kRunHelp)
      ->required();
  compare->add_option("RUN_B", options->after, std::string("the later run: ") + kRunHelp)
      ->required();
  AddComparisonScopeOptions(compare, &options->scope, &options->allowed);
  OnParsed(compare, context, [options](const Session& s) {
    options->scope.allowed = ToAllowed(options->allowed);
    return Compare(s, options->before, options->after, options->scope);
  });
}

void AddCheckCommand(CLI::App& app, CommandContext& context) {
  struct Options {
    std::string run, baseline;
    ComparisonScope scope;
    std::vector<std::string> allowed;
    CheckOptions check;
    CheckFormat format = CheckFormat::kText;
  };
  auto options = std::make_shared<Options>();
  auto* check = app.add_subcommand(
      "check",
      "exit 1 if RUN is significantly slower than BASELINE (a pre-merge gate), 6 if they are "
      "of different series");
  check->add_option("--run", options->run, std::string("the run to judge: ") + kRunHelp)
      ->required();
  check->add_option("--against", options->baseline, std::string("the baseline run: ") + kRunHelp)
      ->required();
  AddComparisonScopeOptions(check, &options->scope, &options->allowed);
  check
      ->add_option("--min-change", options->check.min_change,
                   "smallest relative slowdown that fails (0.02 = 2 %)")
      ->capture_default_str();
  check
      ->add_option("--max-p", options->check.max_p,
                   "significance needed when both runs have per-step samples")
      ->capture_default_str();
  check
      ->add_option("--format", options->format,
                   "text, markdown (a pull-request comment) or junit (a CI test report)")
      ->type_name("TEXT")
      ->transform(NamedValues<CheckFormat>({{"text", CheckFormat::kText},
                                            {"markdown", CheckFormat::kMarkdown},
                                            {"junit", CheckFormat::kJunit}}));
  OnParsed(check, context, [options](const Session& s) {
    options->scope.allowed = ToAllowed(options->allowed);
    return Check(s, options->run, options->baseline, options->check, options->scope,
                 options->format);
  });
}

}  // namespace devtime::ctl
