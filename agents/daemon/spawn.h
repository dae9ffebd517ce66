// Starting a child process with posix_spawn: stdin from /dev/null, stdout and stderr to
// files, optionally in its own folder, process group and environment. The one place the
// agent's job runner (job_runner.h) and the tests' child processes (tests/support/process.h)
// set up a child; waiting for it stays with the caller.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace devtime::agent {

struct SpawnSpec {
  // argv[0] is the program: a path, or a name looked up on $PATH.
  std::vector<std::string> argv;
  std::filesystem::path stdout_path;  // created if missing
  std::filesystem::path stderr_path;  // may be stdout_path: both streams in one file
  bool truncate_output = false;       // false: append to what the files hold
  std::filesystem::path work_dir;     // "" = this process's working directory
  // Its own process group (pgid = its pid), so that kill(-pid, ...) reaches everything the
  // child starts.
  bool own_process_group = false;
  // "KEY=VALUE" entries; nullopt = this process's environment.
  std::optional<std::vector<std::string>> env;
};

// The child's pid. On failure nothing was started, and the message is strerror's: the caller
// says what could not start.
absl::StatusOr<pid_t> Spawn(const SpawnSpec& spec);

}  // namespace devtime::agent
