#include "agents/trace/byte_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"

namespace devtime::trace::stream {

void MappedInput::Consumed(const char* upto) {
  if (upto - dropped_ < static_cast<ptrdiff_t>(kDropBytes)) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto end = reinterpret_cast<uintptr_t>(upto) & ~(page - 1);
  const auto start = reinterpret_cast<uintptr_t>(dropped_) & ~(page - 1);
  if (end > start) {
    madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  }
  dropped_ = reinterpret_cast<const char*>(end);
}

GzipInput::GzipInput(const unsigned char* data, size_t size) : in_(data), in_size_(size) {
  if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw ParseError{"cannot initialise zlib"};
  begin_ = end_ = buf_.data();
}

GzipInput::~GzipInput() { inflateEnd(&zs_); }

bool GzipInput::More(const char* keep) {
  if (done_) return false;
  const size_t kept = static_cast<size_t>(end_ - keep);
  std::vector<char> next;
  // Room for at least one chunk, and geometric growth for units larger than a chunk.
  next.resize(kept + std::max(kChunk, kept));
  if (kept > 0) std::memcpy(next.data(), keep, kept);
  size_t produced = kept;
  while (produced < next.size() && !done_) {
    const size_t in_chunk = std::min<size_t>(in_size_ - consumed_, 1u << 30);
    zs_.next_in = const_cast<Bytef*>(in_ + consumed_);
    zs_.avail_in = static_cast<uInt>(in_chunk);
    zs_.next_out = reinterpret_cast<Bytef*>(next.data() + produced);
    zs_.avail_out = static_cast<uInt>(next.size() - produced);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    consumed_ += in_chunk - zs_.avail_in;
    produced = next.size() - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      if (consumed_ < in_size_) {
        if (inflateReset(&zs_) != Z_OK) throw ParseError{"gzip stream is corrupt"};
        continue;
      }
      done_ = true;
    } else if (rc == Z_BUF_ERROR && consumed_ == in_size_) {
      throw ParseError{"gzip stream is truncated (the writer may still be running)"};
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw ParseError{std::string("gzip stream is corrupt: ") +
                       (zs_.msg ? zs_.msg : "zlib error")};
    }
  }
  next.resize(produced);
  buf_ = std::move(next);
  begin_ = buf_.data();
  end_ = buf_.data() + buf_.size();
  return produced > kept || !done_;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::filesystem::path& path) {
  const std::string origin = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(origin + ": no such file");
    return absl::PermissionDeniedError(origin + ": cannot open: " + std::strerror(errno));
  }
  // The mapping outlives the descriptor; close it on every path out.
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return absl::InternalError(origin + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(origin + ": not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return absl::InvalidArgumentError(origin + ": empty file (0 bytes of JSON)");
  void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    return absl::InternalError(origin + ": cannot map: " + std::strerror(errno));
  }
  madvise(addr, size, MADV_SEQUENTIAL);
  return std::unique_ptr<MappedFile>(new MappedFile(addr, size));
}

MappedFile::~MappedFile() { munmap(addr_, size_); }

}  // namespace devtime::trace::stream
