// Reading and writing the small files tests make and inspect: job and agent configs, run
// files, logs, reports.
#pragma once

#include <string>

namespace devtime::testing {

// The whole content of `path`; "" when it cannot be read (a log not written yet).
std::string ReadFile(const std::string& path);

// Writes `content` to dir/name, replacing what was there; the path.
std::string WriteFile(const std::string& dir, const std::string& name, const std::string& content);

}  // namespace devtime::testing
