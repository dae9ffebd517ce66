#include "proto/wire/env.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace devtime::wire {
namespace fs = std::filesystem;
namespace {

class PosixEnv final : public Env {
 public:
  absl::Time Now() override { return absl::Now(); }
  SteadyTime SteadyNow() override { return std::chrono::steady_clock::now(); }

  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                 SteadyTime deadline, const std::function<bool()>& done) override {
    return changed.wait_until(lock, deadline, done);
  }

  absl::Status WriteFile(const fs::path& path, const std::string& bytes) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return OsError("cannot create", path, errno);
    absl::Status status;
    std::size_t written = 0;
    while (status.ok() && written < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n < 0 && errno != EINTR) status = OsError("cannot write", path, errno);
      if (n > 0) written += static_cast<std::size_t>(n);
    }
    // fsync on the descriptor that wrote: an error of the write-back is reported to it.
    if (status.ok() && ::fsync(fd) != 0) status = OsError("cannot fsync", path, errno);
    if (::close(fd) != 0 && status.ok()) status = OsError("cannot close", path, errno);
    return status;
  }

  absl::Status Rename(const fs::path& from, const fs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return OsError("cannot rename", from, errno);
    return absl::OkStatus();
  }

  absl::Status Remove(const fs::path& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return OsError("cannot remove", path, errno);
    }
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const fs::path& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return OsError("cannot open directory", dir, errno);
    int rc = ::fsync(fd);
    int error = errno;
    ::close(fd);
    return rc == 0 ? absl::OkStatus() : OsError("cannot fsync directory", dir, error);
  }

  std::vector<fs::path> ListDirectory(const fs::path& dir) override {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) entries.push_back(entry.path());
    return entries;
  }

  absl::StatusOr<uint64_t> FreeBytes(const fs::path& path) override {
    struct statvfs stats {};
    if (::statvfs(path.c_str(), &stats) != 0) return OsError("cannot statvfs", path, errno);
    return static_cast<uint64_t>(stats.f_bavail) * stats.f_frsize;
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();  // never destroyed: threads may use it during exit
  return env;
}

bool Env::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                  std::chrono::steady_clock::duration period, const std::function<bool()>& done) {
  return WaitUntil(lock, changed, SteadyNow() + period, done);
}

bool Env::SleepUnless(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                      std::chrono::steady_clock::duration period,
                      const std::function<bool()>& stop) {
  const SteadyTime deadline = SteadyNow() + period;
  while (!stop() && SteadyNow() < deadline) WaitUntil(lock, changed, deadline, stop);
  return !stop();
}

void Env::SleepFor(std::chrono::steady_clock::duration period) {
  std::mutex mu;
  std::condition_variable never;
  std::unique_lock lock(mu);
  SleepUnless(lock, never, period, [] { return false; });
}

absl::Status OsError(const std::string& what, const fs::path& path, int error) {
  std::string message = what + " " + path.string() + ": " + std::strerror(error);
  if (error == ENOSPC || error == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

}  // namespace devtime::wire
