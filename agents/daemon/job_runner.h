// Runs one job command as a child process in its own process group, with its timeout
// enforced on the whole group (SIGTERM, then SIGKILL after a grace period), and keeps the
// tail of its stdout and stderr for the run's failure reason. The timeout is measured on the
// spec's wire::Env steady clock (tests move a fake one past it).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "proto/wire/env.h"

namespace devtime::agent {

struct JobProcessSpec {
  std::string command;                     // run by /bin/sh -c, so users write it as in a terminal
  std::map<std::string, std::string> env;  // added to (overriding) the agent's environment
  std::filesystem::path work_dir;          // created; the job's working directory and log folder
  std::chrono::milliseconds timeout{std::chrono::hours(1)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(10)};  // SIGTERM -> SIGKILL
  // When set to true (the agent is stopping), the job is ended as at its timeout.
  const std::atomic<bool>* cancel = nullptr;
  wire::Env* clock = wire::Env::Default();  // measures the timeout and `elapsed`
  // When set, the job's process group is recorded in a file here while it runs
  // (KillLeftoverJobs), so that a job whose agent was SIGKILLed does not run on unseen.
  std::filesystem::path pid_dir;
};

struct JobOutcome {
  int exit_code = -1;                    // when the command exited by itself
  int signal = 0;                        // when it was killed by a signal
  bool timed_out = false;                // the agent killed it at its timeout
  std::chrono::milliseconds elapsed{0};  // on the spec's env's steady clock
  std::string stdout_tail;               // last 4 KiB of work_dir/stdout.log
  std::string stderr_tail;               // last 4 KiB of work_dir/stderr.log

  bool succeeded() const { return !timed_out && signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by signal 9", "timed out after 30 s (killed)", plus the last
  // stderr line when there is one.
  std::string Describe() const;
};

// Starts the command and waits for it (blocking). Errors only when it cannot be started.
absl::StatusOr<JobOutcome> RunJobProcess(const JobProcessSpec& spec);

// Kills (SIGKILL) the process group of every job recorded in `pid_dir` that still runs (its
// leader is the process recorded, by start time, or is gone while its group lives on), waits
// until each group is gone (at most `wait`), and removes the records. Called at the agent's
// start, before anything is retried: a SIGKILLed agent cannot end its jobs, and a retry beside
// the orphan would run two copies at once. The number of groups killed.
int KillLeftoverJobs(const std::filesystem::path& pid_dir,
                     std::chrono::milliseconds wait = std::chrono::seconds(10));

}  // namespace devtime::agent
