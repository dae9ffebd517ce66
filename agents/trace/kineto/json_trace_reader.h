// Parses one Chrome-trace JSON document — Kineto's object form {"traceEvents": [...], ...}
// or the legacy bare array torch 1.13 writes without Kineto — into a RawTrace.
//
// Streaming: a plain file is read in 256 KiB chunks and a gzip file (magic bytes 1f 8b, any
// name) is inflated in 4 MiB chunks; events are parsed one at a time by a single-pass, string-aware
// scanner that reads only the fields devtime uses (ph, name, cat, ts, dur, pid, tid,
// args.correlation, args["External id"]) and skips every other value. Memory is the RawTrace
// (about 24 bytes per kept event: RawEvents) plus one chunk, never the whole document.
//
// Limits (errors say which): nesting deeper than kMaxJsonDepth; one event (or top-level value)
// larger than kMaxEventBytes; more than kMaxEvents events (io/json_limits.h). Strings devtime keeps
// (names, categories, pid/tid text) must be valid UTF-8; invalid UTF-8 in fields it skips is
// ignored.
#pragma once

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "agents/trace/io/json_limits.h"
#include "agents/trace/model/raw_trace.h"

namespace devtime::trace {

struct TraceReadOptions {
  // When set, complete events whose `cat` is not in the set are counted but not kept (saves
  // memory on python_function-heavy traces). Events without `cat` (legacy) are always kept.
  const std::set<std::string>* keep_categories = nullptr;
  // Host-operator categories (not runtime/driver): only args["External id"] is read from their
  // args, the rest is skipped. nullptr: read both ids for every event.
  const std::set<std::string>* host_categories = nullptr;
  // Tests only: a plain file is read this many bytes at a time (0: stream::FileInput::kChunk).
  size_t file_chunk_bytes = 0;
};

// Reads `path` (.json or gzip by magic bytes) and parses it. Errors are kInvalidArgument
// and name the file and, for a bad event, its index and the field.
absl::StatusOr<RawTrace> ReadTraceFile(const std::filesystem::path& path,
                                       const TraceReadOptions& options = {});

// Parses JSON text held in memory (`size` bytes of `data`, gzip when it starts with 1f 8b);
// `origin` names the input in error messages.
absl::StatusOr<RawTrace> ParseTraceJson(const char* data, size_t size, const std::string& origin,
                                        const TraceReadOptions& options = {});

}  // namespace devtime::trace
