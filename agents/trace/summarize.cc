// Summarize(): the library's entry point — a trace file, or a harness output directory
// (trace + optional environment.json and key_averages.json).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/kineto/key_averages_reader.h"
#include "agents/trace/neuron/neuron_dir.h"
#include "agents/trace/neuron/neuron_join.h"
#include "agents/trace/neuron/neuron_reader.h"
#include "agents/trace/neuron/system_trace_finder.h"
#include "agents/trace/perfetto/pftrace_reader.h"
#include "agents/trace/summary/summarizer.h"
#include "agents/trace/trace_summary.h"

namespace devtime::trace {
namespace {

namespace fs = std::filesystem;

uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

std::optional<DeviceKind> ParseDeviceKind(const std::string& s) {
  if (s == "cpu") return DeviceKind::kCpu;
  if (s == "cuda") return DeviceKind::kCuda;
  if (s == "neuron" || s == "privateuse1") return DeviceKind::kNeuron;
  return std::nullopt;
}

TraceSummary FromKeyAverages(const KeyAverages& ka) {
  TraceSummary summary;
  summary.source_format = "key-averages-json";
  summary.device_kind = ParseDeviceKind(ka.device).value_or(DeviceKind::kCpu);
  summary.ops = ka.rows;
  for (const OpStats& op : summary.ops) {
    summary.self_cpu_total_us += op.self_cpu_us;
    summary.device_total_us += op.self_device_us;
    if (op.name == "ProfilerStep*") summary.capture.active_steps = static_cast<uint32_t>(op.calls);
  }
  summary.has_device_time = summary.device_total_us > 0;
  std::stable_sort(summary.ops.begin(), summary.ops.end(), [](const OpStats& a, const OpStats& b) {
    if (a.self_device_us != b.self_device_us) return a.self_device_us > b.self_device_us;
    return a.self_cpu_us > b.self_cpu_us;
  });
  if (summary.device_kind != DeviceKind::kCpu && !summary.has_device_time) {
    summary.invalid_reason = kDeviceTimeEmpty;
  }
  return summary;
}

// "key_averages.json and the trace disagree on <what> for N ops: " and the first five.
void WarnMismatches(const std::string& what, const std::vector<std::string>& mismatches,
                    TraceSummary* summary) {
  if (mismatches.empty()) return;
  std::string msg = absl::StrFormat(
      "key_averages.json and the trace disagree on %s for %d ops: ", what, mismatches.size());
  for (size_t i = 0; i < mismatches.size() && i < 5; ++i) {
    if (i > 0) msg += "; ";
    msg += mismatches[i];
  }
  if (mismatches.size() > 5) msg += "; ...";
  summary->warnings.push_back(std::move(msg));
}

// The trace's `figure` of each op, by op name.
template <typename T>
std::map<std::string, T> PerOp(const TraceSummary& summary, T OpStats::*figure) {
  std::map<std::string, T> out;
  for (const OpStats& op : summary.ops) out[op.name] = op.*figure;
  return out;
}

// Warns where the harness's key_averages.json and the trace disagree on calls per op.
void CrossCheckCalls(const KeyAverages& ka, TraceSummary* summary) {
  std::map<std::string, uint64_t> trace_calls = PerOp(*summary, &OpStats::calls);
  std::vector<std::string> mismatches;
  for (const OpStats& row : ka.rows) {
    // Taken out of trace_calls: what is left are the ops key_averages.json does not list.
    auto found = trace_calls.extract(row.name);
    const uint64_t in_trace = found ? found.mapped() : 0;
    if (in_trace != row.calls) {
      mismatches.push_back(absl::StrFormat("%s (%d in key_averages.json, %d in trace)", row.name,
                                           row.calls, in_trace));
    }
  }
  for (const auto& [name, calls] : trace_calls) {
    mismatches.push_back(absl::StrFormat("%s (0 in key_averages.json, %d in trace)", name, calls));
  }
  WarnMismatches("calls", mismatches, summary);
}

// Warns where the harness's key_averages.json carries device time and it disagrees with the
// trace's per-op self device time (more than 5 % and 1 us apart).
void CrossCheckDevice(const KeyAverages& ka, TraceSummary* summary) {
  const bool ka_has_device = std::any_of(ka.rows.begin(), ka.rows.end(),
                                         [](const OpStats& r) { return r.self_device_us > 0; });
  if (!ka_has_device || !summary->has_device_time) return;
  const std::map<std::string, double> trace_device = PerOp(*summary, &OpStats::self_device_us);
  std::vector<std::string> mismatches;
  for (const OpStats& row : ka.rows) {
    auto it = trace_device.find(row.name);
    const double in_trace = it == trace_device.end() ? 0 : it->second;
    const double diff = std::abs(in_trace - row.self_device_us);
    if (diff > 1.0 && diff > 0.05 * std::max(in_trace, row.self_device_us)) {
      mismatches.push_back(absl::StrFormat("%s (%.3f us in key_averages.json, %.3f us in trace)",
                                           row.name, row.self_device_us, in_trace));
    }
  }
  WarnMismatches("self device time", mismatches, summary);
}

std::optional<uint32_t> ParseCount(const std::map<std::string, std::string>& env,
                                   const std::string& key) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty() || it->second.size() > 9) return std::nullopt;
  uint32_t n = 0;
  for (char c : it->second) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  return n;
}

// The harness (agents/harness/README.md) records its capture settings in environment.json:
// capture.wait / capture.warmup / capture.active / capture.synchronized, and device.
void ApplyHarnessEnvironment(TraceSummary* summary) {
  const std::map<std::string, std::string>& env = summary->environment;
  if (auto n = ParseCount(env, "capture.wait")) summary->capture.wait_steps = *n;
  if (auto n = ParseCount(env, "capture.warmup")) summary->capture.warmup_steps = *n;
  if (auto it = env.find("capture.synchronized"); it != env.end()) {
    summary->capture.synchronized = it->second == "true";
  }
  if (auto n = ParseCount(env, "capture.active")) {
    if (summary->source_format != "key-averages-json" && *n != summary->steps.size()) {
      summary->warnings.push_back(absl::StrFormat(
          "environment.json says %d active steps but the trace has %d ProfilerStep windows", *n,
          summary->steps.size()));
    }
  }
  if (auto it = env.find("device"); it != env.end()) {
    if (auto kind = ParseDeviceKind(it->second);
        kind && *kind != DeviceKind::kCpu && summary->device_kind == DeviceKind::kCpu) {
      summary->device_kind = *kind;
      if (!summary->has_device_time && !summary->invalid_reason) {
        summary->invalid_reason = kDeviceTimeEmpty;
      }
    }
  }
}

// `windows`, when given, receives the ProfilerStep windows in absolute ns where the trace has
// baseTimeNanoseconds (else as written). `neuron`, when given, is the Neuron session's system
// trace: its counted executions are joined to the ops that launched them (neuron_join.h) and
// summarized as their device time.
absl::StatusOr<TraceSummary> SummarizeFile(const fs::path& path, const SummarizeOptions& options,
                                           std::vector<StepWindow>* windows = nullptr,
                                           const NeuronCapture* neuron = nullptr) {
  // Keep only the events the summary uses (python_function & co. are counted, not stored).
  std::set<std::string> keep = options.host_op_categories;
  keep.insert(options.device_categories.begin(), options.device_categories.end());
  TraceReadOptions read_options;
  read_options.keep_categories = &keep;
  read_options.host_categories = &options.host_op_categories;
  absl::StatusOr<RawTrace> raw = ReadTraceFile(path, read_options);
  if (!raw.ok()) return raw.status();
  // Only a directory's summary (its windows) and the Neuron join use the windows: a plain file
  // skips this pass over the events.
  std::vector<StepWindow> absolute;
  if (windows || neuron) absolute = StepWindows(*raw, options);
  for (StepWindow& w : absolute) {
    w.start_ns += raw->base_time_ns.value_or(0);
    w.end_ns += raw->base_time_ns.value_or(0);
  }
  SummarizeOptions effective = options;
  std::optional<DeviceJoin> join;
  std::vector<std::string> join_warnings;
  if (neuron && neuron->trace) {
    const CaptureWindow window = CaptureWindowOf(*neuron->trace, absolute);
    join = JoinNeuronExecutions(CountedExecutions(*neuron->trace, window), window.aligned,
                                window.lo_ns, window.hi_ns, &*raw, &join_warnings);
    effective.device_categories.insert(kNeuronExecCategory);
  }
  TraceSummary summary = SummarizeRawTrace(std::move(*raw), effective);
  summary.device_join = join;
  for (std::string& w : join_warnings) summary.warnings.push_back(std::move(w));
  if (windows) *windows = std::move(absolute);
  summary.artifacts.push_back({"framework_trace", path, FileSize(path), ""});
  return summary;
}

// The harness's own clock (agents/harness: run.json's started_at / finished_at, RFC 3339 UTC)
// for a capture whose trace does not say when it ran (torch 1.13's relative timestamps).
void ApplyRunJsonTimes(const fs::path& run_json, TraceSummary* summary) {
  absl::StatusOr<std::map<std::string, std::string>> run = ReadEnvironment(run_json);
  if (!run.ok()) {
    summary->warnings.push_back(std::string(run.status().message()) +
                                "; its started_at/finished_at are not used");
    return;
  }
  auto time_of = [&](const char* key) -> std::optional<int64_t> {
    auto it = run->find(key);
    absl::Time t;
    std::string error;
    if (it == run->end() || !absl::ParseTime(absl::RFC3339_full, it->second, &t, &error)) {
      return std::nullopt;
    }
    return absl::ToUnixNanos(t);
  };
  const std::optional<int64_t> started = time_of("started_at");
  if (!started) return;
  summary->capture.started_unix_ns = started;
  summary->capture.finished_unix_ns = std::max(time_of("finished_at").value_or(*started), *started);
  summary->capture.time_source = "run_json";
}

absl::StatusOr<TraceSummary> SummarizeDirectory(const fs::path& top,
                                                const SummarizeOptions& options) {
  // A TorchNeuron output directory: work in its session directory.
  const std::optional<NeuronSession> neuron = FindNeuronSession(top);
  const fs::path dir = neuron ? neuron->dir : top;
  NeuronCapture capture;
  if (neuron) {
    absl::StatusOr<NeuronCapture> read = ReadNeuronCapture(*neuron);
    if (!read.ok()) return read.status();
    capture = std::move(*read);
  }
  std::vector<fs::path> traces;
  fs::path environment;
  fs::path key_averages;
  fs::path run_json;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (IsFrameworkTraceName(name)) traces.push_back(entry.path());
    if (name == "environment.json") environment = entry.path();
    if (name == "key_averages.json") key_averages = entry.path();
    if (name == "run.json") run_json = entry.path();
  }
  if (ec) return absl::InvalidArgumentError(dir.string() + ": cannot list: " + ec.message());
  if (neuron && traces.empty()) {
    // The troubleshooting guide moves neuron_framework_trace_rank_<N>.json into the
    // <instance>_pid_<pid> directory, one above the session (§2.3).
    for (const fs::directory_entry& entry : fs::directory_iterator(dir.parent_path(), ec)) {
      if (entry.is_regular_file() && IsFrameworkTraceName(entry.path().filename().string())) {
        traces.push_back(entry.path());
      }
    }
  }
  // tensorboard_trace_handler names files <worker>.<time_ns>.pt.trace.json: the last name
  // in order is the newest capture.
  std::sort(traces.begin(), traces.end());

  std::optional<KeyAverages> ka;
  if (!key_averages.empty()) {
    absl::StatusOr<KeyAverages> read = ReadKeyAverages(key_averages);
    if (!read.ok()) return read.status();
    ka = std::move(*read);
  }
  TraceSummary summary;
  std::vector<StepWindow> windows;
  if (!traces.empty()) {
    absl::StatusOr<TraceSummary> s =
        SummarizeFile(traces.back(), options, &windows, neuron ? &capture : nullptr);
    if (!s.ok()) return s.status();
    summary = std::move(*s);
    if (traces.size() > 1) {
      summary.warnings.push_back(
          absl::StrFormat("%d trace files in %s; summarized the last by name, %s", traces.size(),
                          dir.string(), traces.back().filename().string()));
    }
    if (ka) {
      CrossCheckCalls(*ka, &summary);
      CrossCheckDevice(*ka, &summary);
      // The harness knows which backend it profiled, even when the trace has no device rows.
      if (auto kind = ParseDeviceKind(ka->device);
          kind && *kind != DeviceKind::kCpu && summary.device_kind == DeviceKind::kCpu) {
        summary.device_kind = *kind;
        if (!summary.has_device_time && !summary.invalid_reason) {
          summary.invalid_reason = kDeviceTimeEmpty;
        }
      }
    }
  } else if (ka) {
    summary = FromKeyAverages(*ka);
  } else if (!neuron) {
    return absl::NotFoundError(dir.string() +
                               ": no trace file (trace.json[.gz], *.pt.trace.json[.gz]) and no "
                               "key_averages.json in directory");
  }
  if (neuron) {
    absl::Status st = ApplyNeuronSession(*neuron, capture, windows, &summary);
    if (!st.ok()) return st;
  }
  if (!key_averages.empty()) {
    summary.artifacts.push_back({"key_averages", key_averages, FileSize(key_averages), ""});
  }
  if (!environment.empty()) {
    absl::StatusOr<std::map<std::string, std::string>> env = ReadEnvironment(environment);
    if (!env.ok()) return env.status();
    summary.environment = std::move(*env);
    summary.artifacts.push_back({"environment", environment, FileSize(environment), ""});
    ApplyHarnessEnvironment(&summary);
    if (run_json.empty()) {
      summary.warnings.push_back(
          "run.json is missing: the harness writes it last, so the capture may be incomplete");
    }
  }
  if (!run_json.empty()) {
    summary.artifacts.push_back({"run_metadata", run_json, FileSize(run_json), ""});
    if (!summary.capture.started_unix_ns) ApplyRunJsonTimes(run_json, &summary);
  }
  return summary;
}

// A Neuron system trace named on its own (system_profile.pftrace[.gz], a JSON system trace):
// its NeuronCore time, executions and layers are summarized as in its session, and the run is
// INVALID with what it lacks — the framework trace, which alone has the operators and steps.
absl::StatusOr<TraceSummary> SummarizeLoneSystemTrace(const fs::path& path) {
  NeuronSession session;
  session.dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  session.root = session.dir;
  NeuronCapture capture;
  capture.files = {path};
  absl::StatusOr<NeuronSystemTrace> sys = IsPerfettoSystemTraceName(path.filename().string())
                                              ? ReadPerfettoSystemTrace(path)
                                              : ReadNeuronSystemTrace(path);
  if (!sys.ok()) return sys.status();
  capture.trace = std::move(*sys);
  TraceSummary summary;
  absl::Status st = ApplyNeuronSession(session, capture, {}, &summary);
  if (!st.ok()) return st;
  summary.source_format = "neuron-system-trace";
  if (!summary.invalid_reason || summary.invalid_reason->starts_with("no framework trace")) {
    summary.invalid_reason =
        path.filename().string() +
        " is a Neuron system trace only: it has NeuronCore time but no operators or steps; "
        "summarize the session directory that holds it and the framework trace (trace.json or "
        "neuron_framework_trace_rank_<N>.json)";
  }
  return summary;
}

}  // namespace

absl::StatusOr<TraceSummary> Summarize(const fs::path& path) {
  return Summarize(path, SummarizeOptions());
}

absl::StatusOr<TraceSummary> Summarize(const fs::path& path, const SummarizeOptions& options) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return absl::NotFoundError(path.string() + ": no such file");
  if (fs::is_directory(status)) return SummarizeDirectory(path, options);
  if (IsPerfettoSystemTraceName(path.filename().string()) ||
      SniffAnySystemTraceFile(path) != SystemTraceForm::kNone) {
    return SummarizeLoneSystemTrace(path);
  }
  return SummarizeFile(path, options);
}

}  // namespace devtime::trace
