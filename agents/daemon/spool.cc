#include "agents/daemon/spool.h"

#include <algorithm>

#include "agents/daemon/files.h"

namespace devtime::agent {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSuffix = ".pb";

bool IsSpooledRun(const fs::path& path) {
  std::error_code ec;
  return path.extension() == kSuffix && fs::is_regular_file(path, ec);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Spool>> Spool::Open(const fs::path& dir, uint64_t max_bytes,
                                                   wire::Env& env) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create spool " + dir.string() + ": " + ec.message());
  RemoveTempFiles(dir, env);
  return std::unique_ptr<Spool>(new Spool(dir, max_bytes, env));
}

std::vector<fs::path> Spool::RunFiles() const {
  std::vector<fs::path> runs = env_.ListDirectory(dir_);
  std::erase_if(runs, [](const fs::path& path) { return !IsSpooledRun(path); });
  return runs;
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
  // Refused before writing when it cannot fit: a write that fills the disk hurts the job too.
  auto free = env_.FreeBytes(dir_);
  if (free.ok() && *free < bytes.size()) {
    return absl::ResourceExhaustedError("spool: no room on the disk of " + dir_.string() +
                                        " for a run of " + std::to_string(bytes.size()) +
                                        " bytes: " + std::to_string(*free) + " bytes free");
  }
  absl::Status stored = ReplaceFileDurably(PathOf(run_id), bytes, env_);
  if (!stored.ok()) return absl::Status(stored.code(), "spool: " + std::string(stored.message()));
  return stored;
}

std::vector<std::string> Spool::Pending() const {
  std::vector<std::pair<fs::file_time_type, std::string>> runs;
  std::error_code ec;
  for (const fs::path& path : RunFiles()) {
    runs.emplace_back(fs::last_write_time(path, ec), path.stem().string());
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
  if (absl::Status removed = env_.Remove(PathOf(run_id)); !removed.ok()) {
    return absl::Status(removed.code(), "spool: " + std::string(removed.message()));
  }
  return env_.SyncDirectory(dir_);
}

absl::StatusOr<fs::path> Spool::SetAside(const std::string& run_id) {
  std::lock_guard lock(mu_);
  fs::path rejected = dir_ / "rejected";
  std::error_code ec;
  fs::create_directories(rejected, ec);
  fs::path target = rejected / (run_id + kSuffix);
  if (ec) return absl::InternalError("spool: cannot set run " + run_id + " aside: " + ec.message());
  if (absl::Status moved = env_.Rename(PathOf(run_id), target); !moved.ok()) {
    return absl::Status(moved.code(), "spool: cannot set run " + run_id +
                                          " aside: " + std::string(moved.message()));
  }
  if (auto s = env_.SyncDirectory(dir_); !s.ok()) return s;
  return target;
}

SpoolStats Spool::Stats() const {
  SpoolStats stats;
  std::error_code ec;
  for (const fs::path& path : RunFiles()) {
    ++stats.runs;
    stats.bytes += fs::file_size(path, ec);
  }
  return stats;
}

}  // namespace devtime::agent
