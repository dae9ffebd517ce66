#include "agents/daemon/trace_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "agents/daemon/files.h"
#include "proto/wire/env.h"
#include "proto/wire/sha256.h"
#include "proto/wire/trace_links.h"

namespace devtime::agent {
namespace fs = std::filesystem;
namespace {

constexpr char kTempSuffix[] = ".tmp";

absl::Status FileError(const std::string& what, const fs::path& path, int error) {
  return wire::OsError("trace store: " + what, path, error);
}

// One path component from an identity string (validated UTF-8 without control characters,
// but free to hold '/' or be "..").
std::string SafeName(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\\') c = '_';
  }
  if (name.empty() || name.front() == '.') name.insert(name.begin(), '_');
  return name;
}

// Copies `source` to `target` (a new file) and returns the SHA-256 (lowercase hex) of the
// bytes written, in one pass: each chunk is hashed as it is written, instead of reading a
// trace of gigabytes a second time to hash the copy. The copy is fsync'd before it counts.
absl::StatusOr<std::string> CopyHashAndSync(const fs::path& source, const fs::path& target) {
  const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return FileError("cannot open", source, errno);
  const int out = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    const int error = errno;
    ::close(in);
    return FileError("cannot create", target, error);
  }
  wire::Sha256 sha;
  absl::Status status;
  std::vector<char> buffer(1 << 20);
  while (status.ok()) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = FileError("cannot read", source, errno);
      break;
    }
    sha.Update(buffer.data(), static_cast<std::size_t>(n));
    for (ssize_t done = 0; done < n && status.ok();) {
      const ssize_t wrote = ::write(out, buffer.data() + done, static_cast<std::size_t>(n - done));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) status = FileError("cannot write", target, errno);
      if (wrote > 0) done += wrote;
    }
  }
  if (status.ok() && ::fsync(out) != 0) status = FileError("cannot fsync", target, errno);
  ::close(in);
  if (::close(out) != 0 && status.ok()) status = FileError("cannot close", target, errno);
  if (!status.ok()) return status;
  return wire::Hex(sha.Final());
}

// Where the file `source` goes inside the run's folder: its path under `output`, or only its
// name when it lies elsewhere.
fs::path RelativePlace(const fs::path& source, const fs::path& output) {
  const fs::path relative = source.lexically_normal().lexically_relative(output.lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return source.filename();
  return relative;
}

// Copies every artifact's file into `folder` (a fresh one); `kept` gets the new artifacts.
absl::Status CopyInto(wire::Env& env, const fs::path& folder, const fs::path& final_folder,
                      const fs::path& output, const v1::RunSummary& run,
                      google::protobuf::RepeatedPtrField<v1::Artifact>* kept) {
  std::vector<fs::path> folders = {folder};
  for (const v1::Artifact& artifact : run.artifacts()) {
    const std::string local = wire::LocalPath(artifact.uri());
    v1::Artifact* stored = kept->Add();
    *stored = artifact;
    if (local.empty()) continue;  // not a file of this host: named as it was
    const fs::path place = RelativePlace(local, fs::absolute(output));
    const fs::path target = folder / place;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return FileError("cannot create", target.parent_path(), ec.value());
    for (fs::path dir = target.parent_path(); dir != folder; dir = dir.parent_path()) {
      folders.push_back(dir);
    }
    auto sha256 = CopyHashAndSync(local, target);
    if (!sha256.ok()) return sha256.status();
    stored->set_uri("file://" + (final_folder / place).string());
    stored->set_size_bytes(fs::file_size(target, ec));
    stored->set_sha256(*sha256);
  }
  // Deepest first, so that each folder's entries are durable before its parent's.
  std::sort(folders.begin(), folders.end());
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    if (absl::Status synced = env.SyncDirectory(*it); !synced.ok()) return synced;
  }
  return absl::OkStatus();
}

}  // namespace

fs::path RunTraceFolder(const fs::path& root, const v1::RunSummary& run) {
  return root / SafeName(run.identity().model()) / SafeName(run.identity().workload()) /
         SafeName(run.identity().run_id());
}

absl::Status KeepTraceFiles(const fs::path& root, const fs::path& output, v1::RunSummary* run,
                            wire::Env& env) {
  const fs::path folder = RunTraceFolder(root, *run);
  const fs::path temp = folder.string() + kTempSuffix;
  std::error_code ec;
  fs::remove_all(temp, ec);  // what a crash left of an earlier try
  fs::create_directories(temp, ec);
  if (ec) return FileError("cannot create", temp, ec.value());
  google::protobuf::RepeatedPtrField<v1::Artifact> kept;
  absl::Status status = CopyInto(env, temp, folder, output, *run, &kept);
  if (status.ok()) {
    fs::remove_all(folder, ec);  // kept before (a run finished again after a restart)
    fs::rename(temp, folder, ec);
    if (ec) status = FileError("cannot rename", temp, ec.value());
  }
  if (status.ok()) status = env.SyncDirectory(folder.parent_path());
  if (!status.ok()) {
    fs::remove_all(temp, ec);  // a partial copy links to nothing
    return status;
  }
  *run->mutable_artifacts() = std::move(kept);
  return absl::OkStatus();
}

int PruneTraceStore(const fs::path& root, fs::file_time_type cutoff) {
  int removed = 0;
  std::error_code ec;
  auto children = [&ec](const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) out.push_back(entry.path());
    }
    return out;
  };
  for (const fs::path& model : children(root)) {
    for (const fs::path& workload : children(model)) {
      for (const fs::path& run : children(workload)) {
        // A folder being written (*.tmp) changes with every file: only an abandoned one is old.
        const auto changed = fs::last_write_time(run, ec);
        if (ec || changed >= cutoff) continue;
        if (fs::remove_all(run, ec) > 0 && !ec) ++removed;
      }
    }
  }
  return removed;
}

absl::Status KeepRunTraces(const AgentConfig& config, const fs::path& output, v1::RunSummary* run,
                           wire::Env& env) {
  if (config.trace_store.empty()) return absl::OkStatus();
  absl::Status kept = KeepTraceFiles(config.trace_store, output, run, env);
  const auto retention = std::chrono::hours(24) * config.trace_retention_days;
  PruneTraceStore(config.trace_store, fs::file_time_type::clock::now() - retention);
  return kept;
}

}  // namespace devtime::agent
