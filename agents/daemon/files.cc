#include "agents/daemon/files.h"

#include <fstream>
#include <sstream>

namespace devtime::agent {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTempSuffix = ".tmp";

}  // namespace

std::optional<std::string> ReadWholeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::Status ReplaceFileDurably(const fs::path& path, const std::string& bytes, wire::Env& env) {
  fs::path temp = path.string() + kTempSuffix;
  absl::Status status = env.WriteFile(temp, bytes);
  if (status.ok()) status = env.Rename(temp, path);
  if (!status.ok()) {
    (void)env.Remove(temp);  // a half-written file is worth nothing and takes room
    return status;
  }
  return env.SyncDirectory(path.parent_path());
}

int RemoveTempFiles(const fs::path& dir, wire::Env& env) {
  int removed = 0;
  for (const fs::path& entry : env.ListDirectory(dir)) {
    if (entry.extension() == kTempSuffix && env.Remove(entry).ok()) ++removed;
  }
  return removed;
}

std::chrono::system_clock::time_point ModificationTime(const std::filesystem::path& path) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return std::chrono::system_clock::now();
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::file_clock::to_sys(t));
}

}  // namespace devtime::agent
