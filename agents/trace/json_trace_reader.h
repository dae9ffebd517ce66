// Parses one Chrome-trace JSON document — Kineto's object form {"traceEvents": [...], ...}
// or the legacy bare array torch 1.13 writes without Kineto — into a RawTrace, streaming
// through the events with simdjson On-Demand (no DOM).
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "agents/trace/raw_trace.h"

namespace devtime::trace {

// Reads `path` (.json or gzip by magic bytes) and parses it. Errors are kInvalidArgument
// and name the file and, for a bad event, its index and the field.
absl::StatusOr<RawTrace> ReadTraceFile(const std::filesystem::path& path);

// Parses JSON text. `padded` must hold `size` bytes of JSON followed by at least
// simdjson::SIMDJSON_PADDING bytes; `origin` names the input in error messages.
absl::StatusOr<RawTrace> ParseTraceJson(const std::string& padded, size_t size,
                                        const std::string& origin);

}  // namespace devtime::trace
