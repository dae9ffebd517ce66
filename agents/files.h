// Whole-file reads and durable writes for the agent's files (agent.yaml, RunSummary JSON
// files, the spool, the last known assignments, the in-flight markers). Callers say what the
// file was for when it cannot be read.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace devtime::agent {

// The bytes of `path`, or nullopt when it cannot be opened (errno then says why).
std::optional<std::string> ReadWholeFile(const std::filesystem::path& path);

// When `path` was last written (now, when that cannot be read): the time a profile was taken
// when nothing in it says so.
std::chrono::system_clock::time_point ModificationTime(const std::filesystem::path& path);

// Writes `bytes` to `path` (created or truncated), fsyncs and closes it. The error names the
// step and the path; a full disk (ENOSPC, EDQUOT) is RESOURCE_EXHAUSTED, anything else INTERNAL.
absl::Status WriteFileDurably(const std::filesystem::path& path, const std::string& bytes);

// How the agent writes a file durably: WriteFileDurably in production; tests pass one that
// fails as a full disk does.
using DurableWrite = std::function<absl::Status(const std::filesystem::path&, const std::string&)>;

// Replaces `path` with `bytes` so that after a crash it holds the old bytes or the new ones:
// written to path.tmp with `write`, renamed over `path`, the folder fsync'd. On failure the
// temporary file is removed and `path` is untouched.
absl::Status ReplaceFileDurably(const std::filesystem::path& path, const std::string& bytes,
                                const DurableWrite& write = WriteFileDurably);

// Makes the entries of `dir` (creations, renames, removals) durable.
absl::Status SyncDirectory(const std::filesystem::path& dir);

// Removes the temporary files (*.tmp) a crash or a failed write left in `dir`; how many.
int RemoveTempFiles(const std::filesystem::path& dir);

}  // namespace devtime::agent
