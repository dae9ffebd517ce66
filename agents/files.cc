#include "agents/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace devtime::agent {
namespace fs = std::filesystem;
namespace {

constexpr const char* kTempSuffix = ".tmp";

absl::Status OsError(const std::string& what, const fs::path& path, int error) {
  std::string message = what + " " + path.string() + ": " + std::strerror(error);
  if (error == ENOSPC || error == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

}  // namespace

std::optional<std::string> ReadWholeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::Status WriteFileDurably(const fs::path& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return OsError("cannot create", path, errno);
  absl::Status status;
  std::size_t written = 0;
  while (status.ok() && written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno != EINTR) status = OsError("cannot write", path, errno);
    if (n > 0) written += static_cast<std::size_t>(n);
  }
  if (status.ok() && ::fsync(fd) != 0) status = OsError("cannot fsync", path, errno);
  if (::close(fd) != 0 && status.ok()) status = OsError("cannot close", path, errno);
  return status;
}

absl::Status ReplaceFileDurably(const fs::path& path, const std::string& bytes,
                                const DurableWrite& write) {
  fs::path temp = path.string() + kTempSuffix;
  absl::Status status = write(temp, bytes);
  std::error_code ec;
  if (status.ok()) fs::rename(temp, path, ec);
  if (ec) status = absl::InternalError("cannot rename " + temp.string() + ": " + ec.message());
  if (!status.ok()) {
    fs::remove(temp, ec);  // a half-written file is worth nothing and takes room
    return status;
  }
  return SyncDirectory(path.parent_path());
}

absl::Status SyncDirectory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open directory", dir, errno);
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : OsError("cannot fsync directory", dir, error);
}

int RemoveTempFiles(const fs::path& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code remove_ec;
    if (entry.path().extension() == kTempSuffix && fs::remove(entry.path(), remove_ec)) ++removed;
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
