// devtime::trace internals — finds a Neuron session's JSON system traces by what they contain,
// not by their file names (issue 12 item 2): a JSON object whose top level has a `trace_event`
// or `trace_events` array (neuron-explorer / neuron-profile view) or an `events` array of
// fetch-API records (`event_type`), anywhere under the session directory or directly in the
// directories between it and the output directory the user named.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace devtime::trace {

enum class SystemTraceForm { kNone, kFetchApi, kExplorerJson, kPerfetto };

// The form of the JSON text `prefix` (the start of a file; it may be cut anywhere): judged from
// the first top-level key that names an event array, within the prefix.
SystemTraceForm SniffSystemTrace(std::string_view prefix);

// SniffSystemTrace() of the first 1 MiB of `file` (gunzipped when it is gzip); kNone for
// files that cannot be read.
SystemTraceForm SniffSystemTraceFile(const std::filesystem::path& file);

// kPerfetto for a system-profile name (pftrace_reader.h) whose first byte (gunzipped) is a
// TracePacket record tag (0x0A); else SniffSystemTraceFile().
SystemTraceForm SniffAnySystemTraceFile(const std::filesystem::path& file);

// True for the names `neuron-explorer view` writes its system profile under
// (system_profile.json / .pftrace, gzip'd or not): system traces whatever their content.
bool IsExplorerOutputName(const std::string& name);

// True for the framework trace names TorchNeuron writes (trace.json,
// neuron_framework_trace_rank_<N>.json) and the other torch trace names.
bool IsFrameworkTraceName(const std::string& name);

// True for *.json and *.json.gz names.
bool IsJsonName(const std::string& name);

// The system traces of a session, sorted by path: every *.json[.gz] or *.pftrace[.gz] file under
// `session_dir` (3 levels deep at most) or directly in one of its ancestors up to and including
// `root`, framework trace names excluded, whose content SniffAnySystemTraceFile() recognises,
// and every IsExplorerOutputName() file.
std::vector<std::filesystem::path> FindSystemTraces(const std::filesystem::path& session_dir,
                                                    const std::filesystem::path& root);

}  // namespace devtime::trace
