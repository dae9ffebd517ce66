#include "tests/support/fake_env.h"

#include <algorithm>
#include <cerrno>

namespace devtime::testing {
namespace fs = std::filesystem;
namespace {

bool Inside(const fs::path& path, const fs::path& dir) {
  auto [end, _] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return end == dir.end();
}

}  // namespace

FakeEnv::FakeEnv(absl::Time wall) : wall_(wall), steady_(std::chrono::hours(1'000)) {}

void FakeEnv::Advance(std::chrono::steady_clock::duration by) {
  std::lock_guard lock(mu_);
  steady_ += by;
  wall_ += absl::FromChrono(by);
  ++moves_;
}

void FakeEnv::SetWall(absl::Time wall) {
  std::lock_guard lock(mu_);
  wall_ = wall;
  ++moves_;
}

absl::Time FakeEnv::Now() {
  std::lock_guard lock(mu_);
  return wall_;
}

wire::Env::SteadyTime FakeEnv::SteadyNow() {
  std::lock_guard lock(mu_);
  return steady_;
}

bool FakeEnv::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                        SteadyTime deadline, const std::function<bool()>& done) {
  uint64_t moves = 0;
  std::multiset<SteadyTime>::iterator waiting;
  {
    std::lock_guard guard(mu_);
    moves = moves_;
    waiting = deadlines_.insert(deadline);
  }
  bool met = done();
  while (!met) {
    {
      std::lock_guard guard(mu_);
      if (steady_ >= deadline || moves_ != moves) break;
    }
    changed.wait_for(lock, std::chrono::milliseconds(1));
    met = done();
  }
  std::lock_guard guard(mu_);
  deadlines_.erase(waiting);
  return met;
}

std::vector<wire::Env::SteadyTime> FakeEnv::Deadlines() const {
  std::lock_guard lock(mu_);
  return {deadlines_.begin(), deadlines_.end()};
}

void FakeEnv::Inject(Fault fault, const fs::path& under, int times) {
  std::lock_guard lock(mu_);
  faults_[fault].push_back(Injected{under, times});
}

int FakeEnv::Pending(Fault fault) const {
  std::lock_guard lock(mu_);
  int pending = 0;
  if (auto it = faults_.find(fault); it != faults_.end()) {
    for (const auto& injected : it->second) pending += injected.times;
  }
  return pending;
}

bool FakeEnv::Take(Fault fault, const fs::path& path) {
  for (auto& injected : faults_[fault]) {
    if (injected.times > 0 && Inside(path, injected.under)) {
      --injected.times;
      return true;
    }
  }
  return false;
}

void FakeEnv::SetFreeBytes(std::optional<uint64_t> bytes) {
  std::lock_guard lock(mu_);
  free_bytes_ = bytes;
}

std::vector<FakeEnv::Write> FakeEnv::Writes(const fs::path& under) const {
  std::lock_guard lock(mu_);
  std::vector<Write> writes;
  for (const auto& write : writes_) {
    if (Inside(write.path, under)) writes.push_back(write);
  }
  return writes;
}

std::vector<std::string> FakeEnv::TempFiles(const fs::path& dir) {
  std::vector<std::string> temps;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".tmp") temps.push_back(entry.path().string());
  }
  return temps;
}

absl::Status FakeEnv::WriteFile(const fs::path& path, const std::string& bytes) {
  bool no_space = false, fsync_fails = false;
  {
    std::lock_guard lock(mu_);
    writes_.push_back(Write{path, steady_});
    no_space = Take(Fault::kNoSpace, path);
    fsync_fails = !no_space && Take(Fault::kFsync, path);
  }
  if (no_space) {
    (void)real_.WriteFile(path, "");  // created, then nothing fits
    return wire::OsError("cannot write", path, ENOSPC);
  }
  absl::Status written = real_.WriteFile(path, bytes);
  if (written.ok() && fsync_fails) return wire::OsError("cannot fsync", path, EIO);
  return written;
}

absl::Status FakeEnv::Rename(const fs::path& from, const fs::path& to) {
  {
    std::lock_guard lock(mu_);
    if (Take(Fault::kRename, to)) return wire::OsError("cannot rename", from, EIO);
  }
  return real_.Rename(from, to);
}

absl::Status FakeEnv::Remove(const fs::path& path) { return real_.Remove(path); }

absl::Status FakeEnv::SyncDirectory(const fs::path& dir) {
  {
    std::lock_guard lock(mu_);
    if (Take(Fault::kSyncDirectory, dir)) return wire::OsError("cannot fsync", dir, EIO);
  }
  return real_.SyncDirectory(dir);
}

std::vector<fs::path> FakeEnv::ListDirectory(const fs::path& dir) {
  return real_.ListDirectory(dir);
}

absl::StatusOr<uint64_t> FakeEnv::FreeBytes(const fs::path& path) {
  {
    std::lock_guard lock(mu_);
    if (free_bytes_) return *free_bytes_;
  }
  return real_.FreeBytes(path);
}

}  // namespace devtime::testing
