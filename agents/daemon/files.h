// Whole-file reads and durable writes for the agent's files (agent.yaml, RunSummary JSON
// files, the spool, the last known assignments, the in-flight markers). Callers say what the
// file was for when it cannot be read. Writes go through a wire::Env (proto/wire/env.h):
// Env::Default() in production; tests inject a full disk or a failing fsync or rename.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "proto/wire/env.h"

namespace devtime::agent {

// The bytes of `path`, or nullopt when it cannot be opened (errno then says why).
std::optional<std::string> ReadWholeFile(const std::filesystem::path& path);

// When `path` was last written (now, when that cannot be read): the time a profile was taken
// when nothing in it says so.
std::chrono::system_clock::time_point ModificationTime(const std::filesystem::path& path);

// Replaces `path` with `bytes` so that after a crash it holds the old bytes or the new ones:
// written and fsync'd to path.tmp, renamed over `path`, the folder fsync'd. On failure the
// temporary file is removed and `path` is untouched. The error names the step and the path;
// a full disk is RESOURCE_EXHAUSTED, anything else INTERNAL.
absl::Status ReplaceFileDurably(const std::filesystem::path& path, const std::string& bytes,
                                wire::Env& env = *wire::Env::Default());

// Removes the temporary files (*.tmp) a crash or a failed write left in `dir`; how many.
int RemoveTempFiles(const std::filesystem::path& dir, wire::Env& env = *wire::Env::Default());

}  // namespace devtime::agent
