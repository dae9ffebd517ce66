// Reads the small JSON side files the devtime harness (agents/harness/) writes next to a
// trace: key_averages.json — {"device": "cpu"|"cuda"|"neuron", "rows": [{"name", "calls",
// "self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us"}]} — and
// environment.json, a flat object of string → string.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/trace/model/summary.h"

namespace devtime::trace {

struct KeyAverages {
  std::string device;         // as written: "cpu", "cuda", "neuron", ...
  std::vector<OpStats> rows;  // step_self_device_us empty
};

absl::StatusOr<KeyAverages> ReadKeyAverages(const std::filesystem::path& path);
// The same from memory: `padded` holds `size` bytes of JSON then simdjson::SIMDJSON_PADDING
// bytes; `path` names the input in messages.
absl::StatusOr<KeyAverages> ParseKeyAverages(const std::string& padded, size_t size,
                                             const std::filesystem::path& path);

// Non-string scalar values are kept as their JSON text; nested values are an error.
absl::StatusOr<std::map<std::string, std::string>> ReadEnvironment(
    const std::filesystem::path& path);
absl::StatusOr<std::map<std::string, std::string>> ParseEnvironment(
    const std::string& padded, size_t size, const std::filesystem::path& path);

}  // namespace devtime::trace
