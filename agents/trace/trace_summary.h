// devtime::trace — reads what a torch.profiler job leaves behind and reduces it to a
// per-operator device-time summary, computed the way torch's key_averages() does.
//
// This header is the library's whole public surface: the plain result types and the entry
// points. It knows nothing of protobuf or gRPC; the agent converts a TraceSummary into the
// wire RunSummary (agents/contract/run_summary_builder.h).
//
// Thread-safety: all functions are pure; concurrent calls on different inputs are safe.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "agents/trace/model/summary.h"

namespace devtime::trace {

// Reads a trace file (Kineto object form or legacy bare array, .json or .json.gz) or a
// profiler output directory and summarizes it. Errors name the file and what is wrong
// (kInvalidArgument for malformed content, kNotFound for a missing path).
absl::StatusOr<TraceSummary> Summarize(const std::filesystem::path& path);
absl::StatusOr<TraceSummary> Summarize(const std::filesystem::path& path,
                                       const SummarizeOptions& options);

// A key_averages()-like text table: one row per operator with calls, self CPU, self and
// total device time and its % share (device columns only when the trace has device time).
std::string RenderTable(const TraceSummary& summary);
// The same, written to `out` as it is made (a table of a million operators is ~170 MB of text:
// the string form would hold it all at once).
void RenderTable(const TraceSummary& summary, std::ostream& out);

// An op-by-op diff of two summaries: ops added, removed and changed, with the change in calls
// and in time (device time when both have it, self CPU otherwise), largest change first.
std::string RenderComparison(const TraceSummary& before, const TraceSummary& after);

}  // namespace devtime::trace
