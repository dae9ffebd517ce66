#include "agents/trace/neuron/neuron_dir.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agents/trace/io/timestamp.h"
#include "agents/trace/neuron/neuron_reader.h"
#include "agents/trace/neuron/system_trace_finder.h"
#include "agents/trace/perfetto/pftrace_reader.h"

namespace devtime::trace {
namespace {

namespace fs = std::filesystem;

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Sums of nanoseconds over many intervals are kept in double: exact below 2^53 ns (104 days),
// and a hostile trace whose durations add up past int64 cannot overflow them.
double Us(double ns) { return ns / 1000.0; }

bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

std::vector<fs::path> Entries(const fs::path& dir, bool dirs) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (dirs ? e.is_directory(ec2) : e.is_regular_file(ec2)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsNeuronFileName(const std::string& name) {
  return name == "ntrace.pb" || name == "trace_info.pb" || EndsWith(name, ".ntff") ||
         EndsWith(name, ".neff");
}

// What a directory holds, as far as finding the session goes.
struct DirKind {
  bool artifacts = false;        // ntrace.pb, trace_info.pb, NEFF/NTFF (also under neffs/)
  bool framework_trace = false;  // trace.json, neuron_framework_trace_rank_<N>.json, ...
  bool system_json = false;      // a system trace (JSON or Perfetto), recognised by content
  // Certainly a session: Neuron artifacts, or a framework trace next to a system trace.
  bool Strong() const { return artifacts || (framework_trace && system_json); }
  bool Any() const { return artifacts || system_json; }
};

DirKind Classify(const fs::path& dir) {
  DirKind k;
  for (const fs::path& f : Entries(dir, false)) {
    const std::string name = f.filename().string();
    if (IsNeuronFileName(name)) {
      k.artifacts = true;
    } else if (IsFrameworkTraceName(name)) {
      k.framework_trace = true;
    } else if (!k.system_json && SniffAnySystemTraceFile(f) != SystemTraceForm::kNone) {
      k.system_json = true;
    }
  }
  const fs::path neffs = dir / "neffs";
  std::error_code ec;
  if (fs::is_directory(neffs, ec) && !Entries(neffs, false).empty()) k.artifacts = true;
  return k;
}

// Strips a trailing "_<tag>_<digits>" (e.g. "_vnc_0", "_instid_0").
std::string StripNumbered(std::string s, std::string_view tag) {
  const std::string marker = "_" + std::string(tag) + "_";
  const size_t at = s.rfind(marker);
  if (at == std::string::npos) return s;
  const std::string digits = s.substr(at + marker.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return s;
  return s.substr(0, at);
}

// neff_<hash>_vnc_0.neff, neff_<hash>.neff, graph_<hash>.neff → <hash>.
std::string NeffKey(const std::string& name) {
  std::string s = name.substr(0, name.size() - 5);
  if (s.starts_with("neff_")) s = s.substr(5);
  if (s.starts_with("graph_")) s = s.substr(6);
  return StripNumbered(s, "vnc");
}

// <hash>_instid_0_vnc_3.ntff, <hash>_vnc_0.ntff → <hash>; profile_nc_0_session_0.ntff → ""
// (session mode: one NTFF per core for every NEFF, no 1:1 pairing, §2.3).
std::string NtffKey(const std::string& name) {
  std::string s = name.substr(0, name.size() - 5);
  if (s.starts_with("profile_nc_")) return "";
  return StripNumbered(StripNumbered(s, "vnc"), "instid");
}

// Total length of the union of `v` (sorted in place), optionally clipped to [lo, hi).
int64_t UnionLength(std::vector<NsInterval> v, int64_t lo, int64_t hi) {
  for (NsInterval& iv : v) {
    iv.start_ns = std::max(iv.start_ns, lo);
    iv.end_ns = std::min(iv.end_ns, hi);
  }
  std::erase_if(v, [](const NsInterval& iv) { return iv.end_ns <= iv.start_ns; });
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end(),
            [](const NsInterval& a, const NsInterval& b) { return a.start_ns < b.start_ns; });
  int64_t total = 0;
  int64_t cs = v.front().start_ns;
  int64_t ce = v.front().end_ns;
  for (const NsInterval& iv : v) {
    if (iv.start_ns > ce) {
      total += ce - cs;
      cs = iv.start_ns;
    }
    ce = std::max(ce, iv.end_ns);
  }
  return total + (ce - cs);
}

// `v` as disjoint intervals in time order (overlapping ones merged).
std::vector<NsInterval> Disjoint(std::vector<NsInterval> v) {
  std::sort(v.begin(), v.end(),
            [](const NsInterval& a, const NsInterval& b) { return a.start_ns < b.start_ns; });
  std::vector<NsInterval> out;
  for (const NsInterval& iv : v) {
    if (!out.empty() && iv.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, iv.end_ns);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

// The Neuron session directory's <timestamp> name as ns since the Unix epoch: all digits, in
// seconds, milliseconds, microseconds or nanoseconds (10, 13, 16 or 19 digits, by length).
std::optional<int64_t> SessionTimestampNs(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) return {};
  if (name.size() < 10 || name.size() > 19 || name.size() % 3 != 1) return {};
  constexpr int64_t kNsPerUnit[] = {1'000'000'000, 1'000'000, 1'000, 1};  // s, ms, us, ns
  const int64_t scale = kNsPerUnit[(name.size() - 10) / 3];
  uint64_t value = 0;  // at most 19 digits: fits
  for (char c : name) value = value * 10 + static_cast<uint64_t>(c - '0');
  if (value > static_cast<uint64_t>(INT64_MAX / scale)) return {};
  return static_cast<int64_t>(value) * scale;
}

void AddArtifacts(const fs::path& dir, TraceSummary* summary) {
  std::vector<fs::path> files = Entries(dir, false);
  for (const fs::path& f : Entries(dir / "neffs", false)) files.push_back(f);
  struct Ntff {
    std::string key;
    uint64_t size;
  };
  std::vector<Ntff> ntffs;
  bool session_ntff = false;
  std::vector<ArtifactRef> neffs;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    const uint64_t size = FileSize(f);
    if (name == "ntrace.pb") {
      summary->artifacts.push_back({"system_trace", f, size, ""});
    } else if (name == "trace_info.pb") {
      summary->artifacts.push_back({"system_trace_info", f, size, ""});
    } else if (name == "cpu_util.pb") {
      summary->artifacts.push_back({"cpu_util", f, size, ""});
    } else if (name == "host_mem.pb") {
      summary->artifacts.push_back({"host_memory", f, size, ""});
    } else if (EndsWith(name, ".neff")) {
      neffs.push_back({"neff", f, size, NeffKey(name)});
      summary->artifacts.push_back(neffs.back());
    } else if (EndsWith(name, ".ntff")) {
      const std::string key = NtffKey(name);
      if (key.empty()) session_ntff = true;
      ntffs.push_back({key, size});
      summary->artifacts.push_back({"ntff", f, size, key});
      if (size == 0) {
        summary->warnings.push_back(absl::StrFormat(
            "NTFF %s is empty (0 bytes): no device profile for it (nothing executed on that "
            "core during the capture, or the capture was cut short)",
            name));
      }
    }
  }
  for (const ArtifactRef& neff : neffs) {
    const bool paired = std::any_of(ntffs.begin(), ntffs.end(),
                                    [&](const Ntff& n) { return n.key == neff.pair_key; });
    if (!paired && !session_ntff) {
      summary->warnings.push_back(
          absl::StrFormat("NEFF %s has no NTFF with hash %s: no device profile for that model",
                          neff.path.filename().string(), neff.pair_key));
    }
  }
}

double BusyNs(const NeuronSystemTrace& t) {
  double ns = 0;
  for (const NsInterval& x : t.device) ns += static_cast<double>(x.end_ns - x.start_ns);
  return ns;
}

// Reads every candidate system trace. When they agree (the same number of NeuronCore
// executions and busy time within 0.1 %: two renderings of one capture, e.g. the fetch-API
// buffer and neuron-explorer's JSON) it returns the one already on the host clock, else the
// first by path, and says so in a warning; when they disagree, `disagreement` names each.
absl::StatusOr<NeuronSystemTrace> ReadSystemTraces(const std::vector<fs::path>& files,
                                                   std::vector<std::string>* warnings,
                                                   std::optional<std::string>* disagreement) {
  std::vector<NeuronSystemTrace> traces;
  for (const fs::path& f : files) {
    absl::StatusOr<NeuronSystemTrace> t = IsPerfettoSystemTraceName(f.filename().string())
                                              ? ReadPerfettoSystemTrace(f)
                                              : ReadNeuronSystemTrace(f);
    if (!t.ok()) return t.status();
    traces.push_back(std::move(*t));
  }
  if (traces.size() == 1) return std::move(traces.front());
  size_t chosen = 0;
  bool agree = true;
  const double busy0 = BusyNs(traces[0]);
  for (size_t i = 0; i < traces.size(); ++i) {
    const double busy = BusyNs(traces[i]);
    if (traces[i].device.size() != traces[0].device.size() ||
        std::abs(busy - busy0) * 1000 > std::max(busy0, 1.0)) {
      agree = false;
    }
    if (traces[i].device_on_host_clock && !traces[chosen].device_on_host_clock) chosen = i;
  }
  if (agree) {
    warnings->push_back(absl::StrFormat(
        "%d Neuron system traces of the same capture (%d NeuronCore executions each); read %s",
        traces.size(), traces[0].device.size(), files[chosen].string()));
  } else {
    std::string text =
        absl::StrFormat("%d Neuron system traces in the output directory disagree:", traces.size());
    for (size_t i = 0; i < traces.size(); ++i) {
      absl::StrAppend(&text, i ? ";" : "", " ", files[i].string(), " (", traces[i].form, ", ",
                      traces[i].device.size(), " NeuronCore executions, ",
                      absl::StrFormat("%.3f", Us(BusyNs(traces[i]))), " us)");
    }
    absl::StrAppend(&text, "; keep the one of this capture and remove the others");
    *disagreement = std::move(text);
  }
  return std::move(traces[chosen]);
}

}  // namespace

std::optional<NeuronSession> FindNeuronSession(const fs::path& dir) {
  NeuronSession session;
  // `d` when it certainly is a session, else the newest session directly below it, else `d`
  // when it holds only a JSON system trace (files directly in an older-layout <pid> directory
  // or a converted JSON next to <timestamp>/ directories).
  auto pick_session_below = [&session](const fs::path& d) -> std::optional<fs::path> {
    const DirKind here = Classify(d);
    if (here.Strong()) return d;
    std::vector<fs::path> sessions;
    for (const fs::path& sub : Entries(d, true)) {
      if (sub.filename() != "neffs" && Classify(sub).Any()) sessions.push_back(sub);
    }
    if (sessions.empty()) {
      if (here.Any()) return d;
      return std::nullopt;
    }
    if (sessions.size() > 1) {
      session.warnings.push_back(
          absl::StrFormat("%d Neuron capture sessions in %s; summarized the newest by name, %s",
                          sessions.size(), d.string(), sessions.back().filename().string()));
    }
    return sessions.back();
  };
  std::optional<fs::path> found;
  if (Classify(dir).Strong()) {
    found = dir;
  } else {
    std::vector<fs::path> ranks;
    for (const fs::path& sub : Entries(dir, true)) {
      if (sub.filename().string().find("_pid_") != std::string::npos) ranks.push_back(sub);
    }
    if (!ranks.empty()) {
      found = pick_session_below(ranks.front());
      if (found && ranks.size() > 1) {
        session.warnings.push_back(absl::StrFormat(
            "%d rank directories (<instance>_pid_<pid>) in %s; summarized the first by name, %s",
            ranks.size(), dir.string(), ranks.front().filename().string()));
      }
    } else {
      found = pick_session_below(dir);
    }
  }
  if (!found) return std::nullopt;
  session.dir = *found;
  session.root = dir;
  // <instance-id>_pid_<pid>: the session directory itself (older layout) or its parent.
  for (const fs::path& p : {session.dir, session.dir.parent_path()}) {
    const std::string name = p.filename().string();
    const size_t at = name.find("_pid_");
    if (at != std::string::npos && at > 0) {
      session.facts["neuron.instance_id"] = name.substr(0, at);
      session.facts["neuron.pid"] = name.substr(at + 5);
      break;
    }
  }
  return session;
}

absl::StatusOr<NeuronCapture> ReadNeuronCapture(const NeuronSession& session) {
  NeuronCapture capture;
  capture.files = FindSystemTraces(session.dir, session.root);
  if (capture.files.empty()) return capture;
  absl::StatusOr<NeuronSystemTrace> sys =
      ReadSystemTraces(capture.files, &capture.warnings, &capture.disagreement);
  if (!sys.ok()) return sys.status();
  capture.trace = std::move(*sys);
  return capture;
}

CaptureWindow CaptureWindowOf(const NeuronSystemTrace& sys,
                              const std::vector<StepWindow>& windows) {
  // The ProfilerStep windows when both traces share the host clock (epoch ns; relative Kineto
  // timestamps cannot be aligned), else everything.
  CaptureWindow w;
  w.aligned = !windows.empty() && sys.device_on_host_clock &&
              windows.front().start_ns > 100'000'000'000'000'000LL;
  if (w.aligned) {
    w.lo_ns = windows.front().start_ns;
    w.hi_ns = w.lo_ns;
    for (const StepWindow& s : windows) w.hi_ns = std::max(w.hi_ns, s.end_ns);
  }
  return w;
}

std::vector<NeuronExecution> CountedExecutions(const NeuronSystemTrace& sys,
                                               const CaptureWindow& window) {
  std::vector<NeuronExecution> out;
  for (const NeuronExecution& x : sys.executions) {
    if (x.start_ns >= window.lo_ns && x.start_ns < window.hi_ns) out.push_back(x);
  }
  return out;
}

namespace {

// The compiled models the counted executions ran, as environment facts: neuron.models (their
// ids, comma-separated; a NEFF's name key where the trace gives no id), and per model
// neuron.model.<id>.neff (the NEFF path, when known) and neuron.model.<id>.executions. At most
// kMaxModelFacts models are listed ("+N" says how many more), to stay inside the RunSummary's
// environment limits.
void AddModelFacts(const std::vector<NeuronExecution>& executions, TraceSummary* summary) {
  constexpr size_t kMaxModelFacts = 16;
  struct Model {
    std::string neff;
    uint64_t executions = 0;
  };
  // What a trace writes goes into RunSummary keys and values, which the collector bounds
  // (proto/wire/limits.h): ids of up to 64 id characters and NEFF paths of up to 1,024 printable
  // ASCII characters are kept, anything else is left out rather than make the run unsendable.
  auto printable = [](const std::string& t, size_t max) {
    return t.size() <= max &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  };
  auto id_like = [](const std::string& t) {
    return !t.empty() && t.size() <= 64 && std::all_of(t.begin(), t.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             c == '_' || c == '-' || c == '.';
    });
  };
  std::map<std::string, Model> models;
  for (const NeuronExecution& x : executions) {
    std::string key = x.model_id;
    if (key.empty() && !x.neff.empty()) {
      const std::string file = fs::path(x.neff).filename().string();
      key = file.ends_with(".neff") ? NeffKey(file) : file;
    }
    if (!id_like(key)) continue;
    Model& m = models[key];
    if (m.neff.empty() && printable(x.neff, 1024)) m.neff = x.neff;
    ++m.executions;
  }
  if (models.empty()) return;
  std::string list;
  size_t listed = 0;
  for (const auto& [key, m] : models) {
    if (listed == kMaxModelFacts) break;
    list += (listed++ == 0 ? "" : ",") + key;
    const std::string prefix = "neuron.model." + key;
    if (!m.neff.empty()) summary->environment[prefix + ".neff"] = m.neff;
    summary->environment[prefix + ".executions"] = std::to_string(m.executions);
  }
  if (models.size() > listed) list += ",+" + std::to_string(models.size() - listed);
  summary->environment["neuron.models"] = list;
}

}  // namespace

absl::Status ApplyNeuronSession(const NeuronSession& session, const NeuronCapture& capture,
                                const std::vector<StepWindow>& windows, TraceSummary* summary) {
  summary->source_format = "neuron-dir";
  summary->device_kind = DeviceKind::kNeuron;
  if (!summary->capture.started_unix_ns) {
    if (std::optional<int64_t> ns = SessionTimestampNs(session.dir.filename().string())) {
      summary->capture.started_unix_ns = summary->capture.finished_unix_ns = *ns;
      summary->capture.time_source = "session_directory";
    }
  }
  for (const std::string& w : session.warnings) summary->warnings.push_back(w);
  for (const auto& [k, v] : session.facts) summary->environment.emplace(k, v);
  AddArtifacts(session.dir, summary);
  for (const fs::path& f : capture.files) {
    summary->artifacts.push_back({"system_trace_json", f, FileSize(f), ""});
  }
  for (const std::string& w : capture.warnings) summary->warnings.push_back(w);

  // The framework trace's dispatch layer (the self time of its cpu_ops, summarizer.cc).
  double framework_us = 0;
  for (const LayerTime& l : summary->layers) {
    if (l.layer == Layer::kFrameworkDispatch) framework_us = l.time_us;
  }
  auto set_reason = [summary](std::string reason) {
    if (!summary->invalid_reason || *summary->invalid_reason == kDeviceTimeEmpty) {
      summary->invalid_reason = std::move(reason);
    }
  };
  if (!capture.trace) {
    const bool has_pb = std::any_of(summary->artifacts.begin(), summary->artifacts.end(),
                                    [](const ArtifactRef& a) { return a.kind == "system_trace"; });
    set_reason(std::string(kDeviceTimeEmpty) + ": " +
               (has_pb ? "the Neuron system trace is only in ntrace.pb, which has no public "
                         "schema; convert it with `neuron-explorer view -d " +
                             session.dir.string() +
                             " --output-format json` (writes system_profile.json)"
                       : "no Neuron system trace in " + session.dir.string() +
                             " (was ProfileMode.RUNTIME enabled?)"));
    return absl::OkStatus();
  }
  const NeuronSystemTrace* sys = &*capture.trace;
  if (capture.disagreement) set_reason(*capture.disagreement);
  summary->capture.events_dropped = sys->events_dropped;
  for (const std::string& w : sys->runtime_warnings) {
    summary->warnings.push_back("Neuron runtime: " + w);
  }
  if (sys->unpaired > 0) {
    summary->warnings.push_back(absl::StrFormat(
        "%d Neuron system trace start/stop events have no partner (capture cut mid-event); "
        "not counted",
        sys->unpaired));
  }

  const CaptureWindow window = CaptureWindowOf(*sys, windows);
  AddModelFacts(CountedExecutions(*sys, window), summary);
  const bool aligned = window.aligned;
  const int64_t lo = window.lo_ns;
  const int64_t hi = window.hi_ns;
  std::vector<NsInterval> counted;
  double outside_ns = 0;
  for (const NsInterval& x : sys->device) {
    if (x.start_ns >= lo && x.start_ns < hi) {
      counted.push_back(x);
    } else {
      outside_ns += static_cast<double>(x.end_ns - x.start_ns);
    }
  }
  if (counted.size() < sys->device.size()) {
    summary->warnings.push_back(absl::StrFormat(
        "%d NeuronCore executions (%.3f us) lie outside the ProfilerStep windows (warm-up or "
        "after the capture); not counted",
        sys->device.size() - counted.size(), Us(outside_ns)));
  }
  double device_ns = 0;
  for (const NsInterval& x : counted) device_ns += static_cast<double>(x.end_ns - x.start_ns);
  summary->has_device_time = device_ns > 0;
  summary->device_total_us = Us(device_ns);
  const bool joined =
      summary->device_join && summary->device_join->unjoined < summary->device_join->by_id +
                                                                   summary->device_join->by_order +
                                                                   summary->device_join->unjoined;
  if (!joined) {
    // Nothing joined: NeuronCore time is per execution and per step only; the ops keep their
    // CPU columns and carry no (all-zero) per-step samples.
    summary->unattributed_device_us = Us(device_ns);
    for (OpStats& op : summary->ops) op.step_self_device_us.clear();
  }
  // The summarizer's own note on device events without a launching op is about CUDA launches;
  // the join's warning says what happened to NeuronCore executions.
  std::erase_if(summary->warnings, [](const std::string& w) {
    return w.find(" device events (") != std::string::npos &&
           w.find("have no launching op in the trace") != std::string::npos;
  });
  // Steps on one clock: an execution belongs to the last window that started at or before it
  // (device work is asynchronous and may end after the host has left the window). On two
  // clocks, the joined executions stay where the summarizer put them — in the step of the op
  // that launched them, as a CUDA kernel — and unjoined ones cannot be placed.
  if (aligned || !joined) {
    for (StepStats& step : summary->steps) step.device_us = 0;
  }
  if (aligned) {
    for (const NsInterval& x : counted) {
      auto it = std::upper_bound(windows.begin(), windows.end(), x.start_ns,
                                 [](int64_t t, const StepWindow& w) { return t < w.start_ns; });
      if (it == windows.begin()) continue;
      const auto s = static_cast<size_t>(it - windows.begin() - 1);
      if (s < summary->steps.size()) summary->steps[s].device_us += Us(x.end_ns - x.start_ns);
    }
  } else if (summary->has_device_time && !windows.empty()) {
    const std::string why =
        sys->device_on_host_clock
            ? "the framework trace has relative timestamps: NeuronCore time cannot be placed in "
              "ProfilerStep windows by time"
            : "the system trace has no timestamp_sync_point to move NeuronCore times to the host "
              "clock";
    summary->warnings.push_back(
        why + (joined ? "; steps carry the NeuronCore time of the executions joined to their "
                        "launching ops, in the launching op's step"
                      : "; steps carry no device time"));
  }
  if (summary->has_device_time && !joined) {
    summary->warnings.push_back(absl::StrFormat(
        "NeuronCore time (%d executions from nc_exec_running) is not attributed to operators: "
        "no execution could be joined to a launching op; per-step and layer totals only",
        counted.size()));
  }

  // Layers: framework dispatch = host time of the framework trace (privateuse1_runtime /
  // _driver are the operator dispatch, §2.2); runtime scheduling = union of the runtime's
  // software events; device = NeuronCore busy time; idle = the window minus device busy time.
  int64_t win_lo = lo;
  int64_t win_hi = hi;
  if (!aligned && !counted.empty()) {
    win_lo = counted.front().start_ns;
    win_hi = win_lo;
    for (const NsInterval& x : counted) {
      win_lo = std::min(win_lo, x.start_ns);
      win_hi = std::max(win_hi, x.end_ns);
    }
  }
  const double framework =
      summary->ops.empty() ? Us(UnionLength(sys->framework, lo, hi)) : framework_us;
  summary->layers.clear();
  // Without a framework trace, dispatch is measured only where the system trace has framework
  // events; else it is absent, like runtime scheduling below.
  if (!summary->ops.empty() || !sys->framework.empty()) {
    summary->layers.push_back({Layer::kFrameworkDispatch, framework});
  }
  // A system trace without runtime software events (the fetch-API buffer may hold only
  // nc_exec_running) did not measure runtime scheduling: the layer is absent, not 0.
  if (!sys->runtime.empty()) {
    summary->layers.push_back(
        {Layer::kRuntimeScheduling,
         Us(UnionLength(sys->runtime, aligned ? lo : INT64_MIN, aligned ? hi : INT64_MAX))});
  }
  summary->layers.push_back({Layer::kDeviceExecution, Us(device_ns)});
  if (!counted.empty() || aligned) {
    // Idle inside the captured steps only (run.proto LAYER_IDLE): on one clock each step window
    // minus the NeuronCore's busy time in it, the time between steps left out; on two clocks
    // the span of the executions minus their busy time.
    std::vector<NsInterval> spans;
    if (aligned) {
      for (const StepWindow& w : windows) spans.push_back({w.start_ns, w.end_ns});
      spans = Disjoint(std::move(spans));
    } else {
      spans.push_back({win_lo, win_hi});
    }
    double idle_ns = 0;
    for (const NsInterval& span : spans) {
      // The window comes from the framework trace too: its length may not fit int64.
      const std::optional<int64_t> length = CheckedSub(span.end_ns, span.start_ns);
      const double length_ns =
          length ? static_cast<double>(*length)
                 : static_cast<double>(span.end_ns) - static_cast<double>(span.start_ns);
      idle_ns += std::max(
          0.0, length_ns - static_cast<double>(UnionLength(counted, span.start_ns, span.end_ns)));
    }
    summary->layers.push_back({Layer::kIdle, Us(idle_ns)});
  }

  // Quality gate (framework-trace reasons such as a missing ProfilerStep window stay first).
  if (summary->has_device_time && summary->invalid_reason &&
      *summary->invalid_reason == kDeviceTimeEmpty) {
    summary->invalid_reason.reset();
  }
  if (sys->invalid_reason) set_reason(*sys->invalid_reason);
  if (sys->events_dropped > 0) {
    set_reason(absl::StrFormat(
        "Neuron runtime dropped %d trace events during capture (raise max_events_per_nc / "
        "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC)",
        sys->events_dropped));
  }
  if (!summary->has_device_time) {
    set_reason(std::string(kDeviceTimeEmpty) +
               (sys->device.empty()
                    ? ": the Neuron system trace has no nc_exec_running event (missing "
                      "torch.neuron.synchronize()?)"
                    : ": every nc_exec_running execution lies outside the ProfilerStep windows"));
  }
  if (summary->ops.empty() && !summary->invalid_reason) {
    summary->invalid_reason =
        "no framework trace (trace.json or "
        "neuron_framework_trace_rank_<N>.json) in " +
        session.dir.string() + " or its parent";
  }
  return absl::OkStatus();
}

}  // namespace devtime::trace
