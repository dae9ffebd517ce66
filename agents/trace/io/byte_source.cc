#include "agents/trace/io/byte_source.h"

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

std::string GunzipBudget::Add(uint64_t in, uint64_t out) {
  in_ += in;
  out_ += out;
  if (out_ > kMaxGunzippedBytes) {
    return "gzip stream inflates to more than " + std::to_string(kMaxGunzippedBytes >> 30) +
           " GiB (limit)";
  }
  if (out_ > kGunzipRatioFreeBytes && out_ / kMaxGunzipRatio > in_) {
    return "gzip stream inflates to more than " + std::to_string(kMaxGunzipRatio) +
           " times its compressed size (limit, after the first " +
           std::to_string(kGunzipRatioFreeBytes >> 20) + " MiB): " + std::to_string(out_) +
           " bytes from " + std::to_string(in_) + " (a decompression bomb?)";
  }
  return {};
}

GzipInput::GzipInput(const unsigned char* data, size_t size) : in_(data), in_size_(size) {
  if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw ParseError{"cannot initialise zlib"};
}

GzipInput::~GzipInput() { inflateEnd(&zs_); }

bool GzipInput::More(const char* keep) {
  if (done_) return false;
  const size_t kept = static_cast<size_t>(end_ - keep);
  // Room for at least one chunk, and geometric growth for units larger than a chunk. new[]
  // without () leaves the bytes uninitialised: only what inflate writes becomes resident.
  const size_t capacity = kept + std::max(kChunk, kept);
  std::unique_ptr<char[]> next(new char[capacity]);
  if (kept > 0) std::memcpy(next.get(), keep, kept);
  size_t produced = kept;
  while (produced < capacity && !done_) {
    const size_t in_chunk = std::min<size_t>(in_size_ - consumed_, 1u << 30);
    // At most one chunk per call, so that the budget is checked every kChunk bytes.
    const size_t out_chunk = std::min(capacity - produced, kChunk);
    zs_.next_in = const_cast<Bytef*>(in_ + consumed_);
    zs_.avail_in = static_cast<uInt>(in_chunk);
    zs_.next_out = reinterpret_cast<Bytef*>(next.get() + produced);
    zs_.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const size_t read = in_chunk - zs_.avail_in;
    const size_t wrote = out_chunk - zs_.avail_out;
    consumed_ += read;
    produced += wrote;
    if (std::string over = budget_.Add(read, wrote); !over.empty()) throw ParseError{over};
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
  buf_ = std::move(next);
  begin_ = buf_.get();
  end_ = buf_.get() + produced;
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
