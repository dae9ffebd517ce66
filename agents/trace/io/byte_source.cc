#include "agents/trace/io/byte_source.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
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

namespace {

// What an igzip error code means, for "gzip stream is corrupt: ...".
const char* InflateError(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK:
      return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
      return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK:
      return "invalid lookback distance";
    case ISAL_INVALID_WRAPPER:
      return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM:
      return "incorrect checksum";
    default:
      return "inflate error";
  }
}

// Starts the next gzip member (header parsed and CRC checked by igzip) at `in`.
void StartMember(inflate_state* st, const unsigned char* in, size_t size) {
  isal_inflate_reset(st);
  st->crc_flag = ISAL_GZIP;
  st->next_in = const_cast<uint8_t*>(in);
  // avail_in is 32-bit: feed at most 1 GiB at a time (Inflate refills).
  st->avail_in = static_cast<uint32_t>(std::min<size_t>(size, size_t{1} << 30));
}

}  // namespace

GzipInput::GzipInput(const unsigned char* data, size_t size)
    : state_(std::make_unique<inflate_state>()), in_(data), in_size_(size) {
  isal_inflate_init(state_.get());
  StartMember(state_.get(), in_, in_size_);
}

GzipInput::~GzipInput() = default;

size_t GzipInput::Inflate(char* out, size_t size) {
  inflate_state* st = state_.get();
  st->next_out = reinterpret_cast<uint8_t*>(out);
  st->avail_out = static_cast<uint32_t>(size);
  while (st->avail_out > 0) {
    if (st->block_state == ISAL_BLOCK_FINISH) {
      // A member ended (its CRC checked); the next one, if any bytes are left, continues the
      // stream (concatenated members are one file, as gzip -d reads them).
      consumed_ = static_cast<size_t>(st->next_in - in_);
      if (consumed_ == in_size_) {
        done_ = true;
        break;
      }
      // What follows must be another member (igzip would wait for a whole 10-byte header).
      if (!IsGzip(in_ + consumed_, in_size_ - consumed_) &&
          !(in_size_ - consumed_ == 1 && in_[consumed_] == 0x1f)) {
        throw ParseError{"gzip stream is corrupt: data after the end of a member is not gzip"};
      }
      StartMember(st, in_ + consumed_, in_size_ - consumed_);
    }
    if (st->avail_in == 0) {
      const size_t at = static_cast<size_t>(st->next_in - in_);
      st->avail_in = static_cast<uint32_t>(std::min<size_t>(in_size_ - at, size_t{1} << 30));
    }
    const uint32_t avail_before = st->avail_out;
    const int rc = isal_inflate(st);
    if (rc < 0) throw ParseError{std::string("gzip stream is corrupt: ") + InflateError(rc)};
    if (rc == ISAL_NEED_DICT) throw ParseError{"gzip stream is corrupt: needs a dictionary"};
    if (st->block_state != ISAL_BLOCK_FINISH && st->avail_out > 0 && st->avail_in == 0 &&
        static_cast<size_t>(st->next_in - in_) == in_size_ && st->avail_out == avail_before) {
      throw ParseError{"gzip stream is truncated (the writer may still be running)"};
    }
  }
  return size - st->avail_out;
}

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
    // At most one chunk per call, so that the budget is checked every kChunk bytes.
    const size_t before = static_cast<size_t>(state_->next_in - in_);
    const size_t wrote = Inflate(next.get() + produced, std::min(capacity - produced, kChunk));
    produced += wrote;
    const size_t read = static_cast<size_t>(state_->next_in - in_) - before;
    if (std::string over = budget_.Add(read, wrote); !over.empty()) throw ParseError{over};
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
