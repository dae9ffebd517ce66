// A wire::Env (proto/wire/env.h) for tests: clocks that move only when the test moves them,
// and the real filesystem with faults injected on request (a full disk, a failing fsync or
// rename), recording each durable write so a test can check when it happened.
//
// Time: Advance moves both clocks; SetWall moves the wall clock alone, forward or back (an NTP
// step), as a host's clock can. A thread waiting in WaitUntil returns when its deadline is
// reached or the clock is moved (callers re-check, as after a spurious wakeup); it polls its
// condition every millisecond of real time, so a notify the test races with is never lost.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proto/wire/env.h"

namespace devtime::testing {

class FakeEnv final : public wire::Env {
 public:
  enum class Fault {
    kNoSpace,  // WriteFile fails with ENOSPC, leaving the zero-byte file a real full disk leaves
    kFsync,    // WriteFile writes the bytes, then fails at the fsync (EIO)
    kRename,   // Rename fails (EIO); nothing is renamed
    kSyncDirectory,  // SyncDirectory of a folder fails (EIO)
  };
  struct Write {
    std::filesystem::path path;
    SteadyTime at;
  };

  // Both clocks start at `wall` (steady time at an arbitrary origin).
  explicit FakeEnv(absl::Time wall = absl::FromUnixSeconds(1'780'000'000));  // 2026-05-28

  void Advance(std::chrono::steady_clock::duration by);
  void SetWall(absl::Time wall);

  // The next `times` calls that `fault` applies to, on paths inside `under`, fail.
  void Inject(Fault fault, const std::filesystem::path& under, int times = 1);
  // Injected failures not yet used.
  int Pending(Fault fault) const;
  // Makes FreeBytes answer `bytes` (real free space again with nullopt).
  void SetFreeBytes(std::optional<uint64_t> bytes);
  // The deadlines of the threads waiting in WaitUntil now, earliest first: what a test
  // checks a schedule against without racing it.
  std::vector<SteadyTime> Deadlines() const;
  // WriteFile calls on paths inside `under`, failed ones included, in order.
  std::vector<Write> Writes(const std::filesystem::path& under) const;

  // The temporary files (*.tmp) anywhere under `dir`.
  static std::vector<std::string> TempFiles(const std::filesystem::path& dir);

  absl::Time Now() override;
  SteadyTime SteadyNow() override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                 SteadyTime deadline, const std::function<bool()>& done) override;
  absl::Status WriteFile(const std::filesystem::path& path, const std::string& bytes) override;
  absl::Status Rename(const std::filesystem::path& from, const std::filesystem::path& to) override;
  absl::Status Remove(const std::filesystem::path& path) override;
  absl::Status SyncDirectory(const std::filesystem::path& dir) override;
  std::vector<std::filesystem::path> ListDirectory(const std::filesystem::path& dir) override;
  absl::StatusOr<uint64_t> FreeBytes(const std::filesystem::path& path) override;

 private:
  struct Injected {
    std::filesystem::path under;
    int times = 0;
  };
  // Uses up one injected `fault` that applies to `path`; whether there was one. Needs mu_.
  bool Take(Fault fault, const std::filesystem::path& path);

  mutable std::mutex mu_;
  absl::Time wall_;                                // guarded by mu_
  SteadyTime steady_;                              // guarded by mu_
  uint64_t moves_ = 0;                             // clock moves so far; guarded by mu_
  std::map<Fault, std::vector<Injected>> faults_;  // guarded by mu_
  std::optional<uint64_t> free_bytes_;             // guarded by mu_
  std::vector<Write> writes_;                      // guarded by mu_
  std::multiset<SteadyTime> deadlines_;            // of the waiting threads; guarded by mu_
  wire::Env& real_ = *wire::Env::Default();
};

}  // namespace devtime::testing
