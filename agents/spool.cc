#include "agents/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agents/files.h"

namespace devtime::agent {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSuffix = ".pb";
constexpr const char* kTempSuffix = ".tmp";

absl::Status OsError(const std::string& what, const fs::path& path) {
  return absl::InternalError(what + " " + path.string() + ": " + std::strerror(errno));
}

// Writes `bytes` to `path` and makes them durable before returning.
absl::Status WriteDurably(const fs::path& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return OsError("cannot create", path);
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto status = OsError("cannot write", path);
      ::close(fd);
      return status;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    auto status = OsError("cannot fsync", path);
    ::close(fd);
    return status;
  }
  if (::close(fd) != 0) return OsError("cannot close", path);
  return absl::OkStatus();
}

absl::Status SyncDirectory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open directory", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : OsError("cannot fsync directory", dir);
}

bool IsSpooledRun(const fs::directory_entry& entry) {
  return entry.is_regular_file() && entry.path().extension() == kSuffix;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Spool>> Spool::Open(const fs::path& dir, uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create spool " + dir.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == kTempSuffix) fs::remove(entry.path(), ec);
  }
  if (ec) return absl::InternalError("cannot read spool " + dir.string() + ": " + ec.message());
  return std::unique_ptr<Spool>(new Spool(dir, max_bytes));
}

fs::path Spool::PathOf(const std::string& run_id) const { return dir_ / (run_id + kSuffix); }

absl::Status Spool::Put(const v1::RunSummary& run) {
  const std::string& run_id = run.identity().run_id();
  if (run_id.empty() || run_id.find('/') != std::string::npos || run_id[0] == '.') {
    return absl::InvalidArgumentError("spool: run id '" + run_id + "' cannot name a file");
  }
  std::string bytes;
  if (!run.SerializeToString(&bytes)) return absl::InternalError("spool: cannot serialize run");
  std::lock_guard lock(mu_);
  if (fs::exists(PathOf(run_id))) return absl::OkStatus();
  SpoolStats stats = Stats();
  if (stats.bytes + bytes.size() > max_bytes_) {
    return absl::ResourceExhaustedError(
        "spool " + dir_.string() + " is full: " + std::to_string(stats.runs) + " runs, " +
        std::to_string(stats.bytes) + " bytes; adding " + std::to_string(bytes.size()) +
        " bytes would exceed its bound of " + std::to_string(max_bytes_) +
        " (is the collector reachable?)");
  }
  fs::path temp = dir_ / (run_id + kTempSuffix);
  if (auto s = WriteDurably(temp, bytes); !s.ok()) return s;
  std::error_code ec;
  fs::rename(temp, PathOf(run_id), ec);
  if (ec) return absl::InternalError("spool: cannot rename " + temp.string() + ": " + ec.message());
  return SyncDirectory(dir_);
}

std::vector<std::string> Spool::Pending() const {
  std::vector<std::pair<fs::file_time_type, std::string>> runs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (!IsSpooledRun(entry)) continue;
    runs.emplace_back(entry.last_write_time(ec), entry.path().stem().string());
  }
  std::sort(runs.begin(), runs.end());
  std::vector<std::string> ids;
  for (auto& [time, id] : runs) ids.push_back(std::move(id));
  return ids;
}

absl::StatusOr<v1::RunSummary> Spool::Load(const std::string& run_id) const {
  auto bytes = ReadWholeFile(PathOf(run_id));
  if (!bytes) return absl::NotFoundError("spool: run " + run_id + " is not spooled");
  v1::RunSummary run;
  if (!run.ParseFromString(*bytes)) {
    return absl::DataLossError("spool: " + PathOf(run_id).string() + " does not parse");
  }
  return run;
}

absl::Status Spool::Remove(const std::string& run_id) {
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::remove(PathOf(run_id), ec);
  if (ec) return absl::InternalError("spool: cannot remove run " + run_id + ": " + ec.message());
  return SyncDirectory(dir_);
}

absl::StatusOr<fs::path> Spool::SetAside(const std::string& run_id) {
  std::lock_guard lock(mu_);
  fs::path rejected = dir_ / "rejected";
  std::error_code ec;
  fs::create_directories(rejected, ec);
  fs::path target = rejected / (run_id + kSuffix);
  if (!ec) fs::rename(PathOf(run_id), target, ec);
  if (ec) return absl::InternalError("spool: cannot set run " + run_id + " aside: " + ec.message());
  if (auto s = SyncDirectory(dir_); !s.ok()) return s;
  return target;
}

SpoolStats Spool::Stats() const {
  SpoolStats stats;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (!IsSpooledRun(entry)) continue;
    ++stats.runs;
    stats.bytes += entry.file_size(ec);
  }
  return stats;
}

}  // namespace devtime::agent
