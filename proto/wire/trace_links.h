// How to open a run's trace files: the one place that knows which viewer opens which artifact
// (devtimectl runs traces, regressions show, the report and the Alertmanager `traces`
// annotation all ask here).
//
//   Kineto / torch.profiler JSON (kind framework_trace, .json or .json.gz) and Perfetto
//   traces (.pftrace, as Neuron Explorer writes them): the Perfetto UI. The command starts
//   a local trace processor, `trace_processor --httpd FILE`, which https://ui.perfetto.dev
//   then uses (a browser runs out of memory on traces of more than a few hundred MB, so the
//   Neuron docs recommend it; shared/reference/perfetto-neuron-monitor.md A1.5); smaller
//   files load in the UI directly ("Open trace file"), which the hint says too, since
//   trace_processor is not packaged in Debian.
//   Neuron captures (ntrace.pb = kind system_trace, NEFF, NTFF): Neuron Explorer on the
//   capture's session directory, `neuron-explorer view -d DIR`
//   (shared/reference/profiler-formats.md 2.3 and (c); perfetto-neuron-monitor.md A4:
//   add `--output-format perfetto` for .pftrace files the Perfetto UI opens).
//   Anything else (key_averages, environment, run.json, Neuron JSON exports): no viewer.
#pragma once

#include <string>
#include <vector>

#include "devtime/v1/run.pb.h"

namespace devtime::wire {

struct TraceOpening {
  std::string viewer;   // "Perfetto UI" or "Neuron Explorer"; "" = no viewer opens the file
  std::string target;   // what the viewer opens: the file, or the Neuron session directory
  std::string command;  // the shell command, target quoted; "" when the file is not local
  std::string then;     // what to do after the command ("" = nothing)
};

// How `artifact` is opened. `command` is set only for file:// URIs (a remote copy must be
// fetched first; `then` says so).
TraceOpening OpenWith(const v1::Artifact& artifact);

// Whether a viewer opens `artifact`: the artifacts that are a run's trace files.
bool IsTraceFile(const v1::Artifact& artifact);

// The trace files among `artifacts`, in their order.
google::protobuf::RepeatedPtrField<v1::Artifact> TraceFiles(
    const google::protobuf::RepeatedPtrField<v1::Artifact>& artifacts);

// The openings of `traces` without repeats (the files of one Neuron session share one),
// in order: "Perfetto UI: trace_processor --httpd '/keep/m/w/id/trace.json', then open
// https://ui.perfetto.dev". A file without a command reads "VIEWER: URI (THEN)".
std::vector<std::string> OpeningLines(
    const google::protobuf::RepeatedPtrField<v1::Artifact>& traces);

// The local path of a file:// URI, "" for any other URI.
std::string LocalPath(const std::string& uri);

// `text` quoted for a POSIX shell: '...' with each ' written as '\''.
std::string ShellQuote(const std::string& text);

}  // namespace devtime::wire
