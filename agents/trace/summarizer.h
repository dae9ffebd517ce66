// Reduces a RawTrace to a TraceSummary the way torch's key_averages() does
// (profiler-formats.md §1.8): host ops nest by time per (pid, tid) with torch's own interval
// rule; self CPU = duration − children's durations; device events are attributed to the
// launching op (correlation → runtime event → innermost enclosing op; External id as
// fallback); total device = own + children's; ProfilerStep#N windows give the steps.
#pragma once

#include "absl/status/statusor.h"
#include "agents/trace/raw_trace.h"
#include "agents/trace/trace_summary.h"

namespace devtime::trace {

// Never fails on well-formed RawTrace content; problems of trust go to invalid_reason and
// warnings. `origin` names the input in messages.
TraceSummary SummarizeRawTrace(const RawTrace& trace, const SummarizeOptions& options);

// "ProfilerStep#12" → 12; nullopt for other names (regex ProfilerStep\s*#\s*(\d+)).
std::optional<uint32_t> ProfilerStepNumber(std::string_view name);

// torch's key_averages() name rewrite: "ProfilerStep#N" → "ProfilerStep*".
std::string KeyAveragesName(std::string_view name);

}  // namespace devtime::trace
