// The environment a devtime process runs in: its clocks and its filesystem, behind one
// interface (after LevelDB's Env), so that tests can drive time by hand and inject the faults
// a real disk has (tests/support/fake_env.h). Production code uses Env::Default(), POSIX and
// the real clocks. It lives in devtime::wire because that is the one library both the agent
// and the collector link.
//
// Errors are statuses naming the step and the path; a full disk (ENOSPC, EDQUOT) is
// RESOURCE_EXHAUSTED, any other failure INTERNAL.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devtime::wire {

class Env {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Env() = default;

  // The POSIX filesystem and the system's clocks; never destroyed.
  static Env* Default();

  // ---- clock ----

  // Wall-clock time: what cron slots and timestamps are computed from. It may jump.
  virtual absl::Time Now() = 0;
  // Monotonic time: what timeouts, backoffs and periods are measured with.
  virtual SteadyTime SteadyNow() = 0;
  // With `lock` (on the mutex `changed` is used with) held: waits until `done()` holds or the
  // steady clock reaches `deadline`; returns done(). Like a condition variable it may return
  // early (a fake clock returns when it is moved), so callers re-check their own deadline.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                         SteadyTime deadline, const std::function<bool()>& done) = 0;
  // WaitUntil(lock, changed, SteadyNow() + period, done).
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
               std::chrono::steady_clock::duration period, const std::function<bool()>& done);
  // With `lock` held: waits until `period` of the steady clock has passed (however often the
  // wait returns early) or `stop()` holds; returns !stop().
  bool SleepUnless(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                   std::chrono::steady_clock::duration period, const std::function<bool()>& stop);
  // Blocks the caller for `period` of the steady clock.
  void SleepFor(std::chrono::steady_clock::duration period);

  // ---- filesystem ----

  // Writes `bytes` to `path` (created with mode 0600, or truncated), fsyncs and closes it.
  virtual absl::Status WriteFile(const std::filesystem::path& path, const std::string& bytes) = 0;
  // Renames `from` over `to` (atomic on one filesystem).
  virtual absl::Status Rename(const std::filesystem::path& from,
                              const std::filesystem::path& to) = 0;
  // Removes a file; removing an absent file is not an error.
  virtual absl::Status Remove(const std::filesystem::path& path) = 0;
  // Makes the entries of `dir` (creations, renames, removals) durable.
  virtual absl::Status SyncDirectory(const std::filesystem::path& dir) = 0;
  // The entries of `dir` (full paths, in no order); an absent folder has none.
  virtual std::vector<std::filesystem::path> ListDirectory(const std::filesystem::path& dir) = 0;
  // The bytes an unprivileged process may still write on the filesystem holding `path`.
  virtual absl::StatusOr<uint64_t> FreeBytes(const std::filesystem::path& path) = 0;
};

// The error status for an OS call that failed with `error` (errno) doing `what` on `path`.
absl::Status OsError(const std::string& what, const std::filesystem::path& path, int error);

}  // namespace devtime::wire
