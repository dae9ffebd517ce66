// Reduces a RawTrace to a TraceSummary the way torch's key_averages() does
// (profiler-formats.md §1.8): host ops nest by time per (pid, tid) with torch's own interval
// rule; self CPU = duration − children's durations; device events are attributed to the
// launching op (correlation → runtime event → innermost enclosing op; External id as
// fallback); total device = own + children's; ProfilerStep#N windows give the steps.
#pragma once

#include "absl/status/statusor.h"
#include "agents/trace/model/raw_trace.h"
#include "agents/trace/model/step_window.h"
#include "agents/trace/model/summary.h"

namespace devtime::trace {

// Never fails on well-formed RawTrace content; problems of trust go to invalid_reason and
// warnings, which name events by their index in the file (the caller knows the file's name).
TraceSummary SummarizeRawTrace(const RawTrace& trace, const SummarizeOptions& options);
// The same, freeing `trace`'s events as soon as the per-event work is done, before the op rows
// are built: the peak memory of a trace with many distinct names is its events or its rows,
// not both. `trace` is left with its strings and no events.
TraceSummary SummarizeRawTrace(RawTrace&& trace, const SummarizeOptions& options);

// The ProfilerStep#N windows among the host ops of `trace`, sorted by start — the same windows
// SummarizeRawTrace() makes its steps from.
std::vector<StepWindow> StepWindows(const RawTrace& trace, const SummarizeOptions& options);

// "ProfilerStep#12" → 12; nullopt for other names (regex ProfilerStep\s*#\s*(\d+)).
std::optional<uint32_t> ProfilerStepNumber(std::string_view name);

// torch's key_averages() name rewrite: "ProfilerStep#N" → "ProfilerStep*".
std::string KeyAveragesName(std::string_view name);

}  // namespace devtime::trace
