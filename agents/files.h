// Whole-file reads for the agent's inputs (agent.yaml, RunSummary JSON files, the spool, the
// last known assignments). Callers say what the file was for when it cannot be read.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace devtime::agent {

// The bytes of `path`, or nullopt when it cannot be opened (errno then says why).
std::optional<std::string> ReadWholeFile(const std::filesystem::path& path);

}  // namespace devtime::agent
