// TorchNeuron / Neuron runtime output directories (profiler-formats.md §2.3, §6.9):
//   <out>/<instance-id>_pid_<pid>/<timestamp>/{trace.json | neuron_framework_trace_rank_<N>.json,
//     ntrace.pb, trace_info.pb, cpu_util.pb, host_mem.pb, neff_<hash>[_vnc_N].neff,
//     profile_nc_<n>_session_<k>.ntff | <hash>[_instid_<i>]_vnc_<N>.ntff, neffs/graph_<hash>.neff}
// plus the JSON system trace devtime reads, in either JSON form (neuron_reader.h) and under any
// name: recognised by content anywhere in the session (system_trace_finder.h). Internal to
// devtime::trace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agents/trace/model/step_window.h"
#include "agents/trace/model/summary.h"
#include "agents/trace/neuron/neuron_reader.h"

namespace devtime::trace {

struct NeuronSession {
  std::filesystem::path dir;                 // the <timestamp> (or older: <pid>) directory
  std::filesystem::path root;                // the directory the user named (dir or above)
  std::vector<std::string> warnings;         // several ranks / sessions: which one was taken
  std::map<std::string, std::string> facts;  // neuron.instance_id, neuron.pid
};

// The Neuron session directory `dir` is, or holds (one level of <instance>_pid_<pid>, one of
// <timestamp>; the first rank and the newest timestamp by name); nullopt when `dir` has no
// Neuron files.
std::optional<NeuronSession> FindNeuronSession(const std::filesystem::path& dir);

// The session's JSON system trace, read once: every candidate (system_trace_finder.h) is read
// and compared; `trace` is the one chosen.
struct NeuronCapture {
  std::vector<std::filesystem::path> files;  // the candidates, sorted
  std::optional<NeuronSystemTrace> trace;    // nullopt: no JSON system trace
  std::optional<std::string> disagreement;   // candidates that disagree: the INVALID reason
  std::vector<std::string> warnings;
};

// Errors: a candidate that cannot be read (its message names the file).
absl::StatusOr<NeuronCapture> ReadNeuronCapture(const NeuronSession& session);

// The window NeuronCore executions are counted in: [first step start, last step end) in
// absolute ns when the system trace and the framework trace share the host clock, else all.
struct CaptureWindow {
  bool aligned = false;
  int64_t lo_ns = INT64_MIN;
  int64_t hi_ns = INT64_MAX;
};
CaptureWindow CaptureWindowOf(const NeuronSystemTrace& sys, const std::vector<StepWindow>& windows);

// The executions of `sys` that start inside `window` (the ones counted), in time order.
std::vector<NeuronExecution> CountedExecutions(const NeuronSystemTrace& sys,
                                               const CaptureWindow& window);

// Adds the session's system trace (layers, device time, steps, dropped events), artifacts and
// NEFF/NTFF checks to `summary`, which holds the framework trace's summary (or nothing, when the
// session has no framework trace) — summarized with the counted executions joined to their ops
// when summary->device_join is set (neuron_join.h). `windows` are the framework trace's
// ProfilerStep windows in absolute ns (empty when unknown).
absl::Status ApplyNeuronSession(const NeuronSession& session, const NeuronCapture& capture,
                                const std::vector<StepWindow>& windows, TraceSummary* summary);

}  // namespace devtime::trace
