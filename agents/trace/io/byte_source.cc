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

MappedInput::MappedInput(const char* data, size_t size)
    : MemoryInput(data, size), dropped_(data), populated_(data) {
  Populate();
}

void MappedInput::Populate() {
#if !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels refuse it (EINVAL): faults then
#endif
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(populated_) & ~(page - 1);
  const char* next = populated_ + std::min<size_t>(kPopulateBytes, end_ - populated_);
  if (reinterpret_cast<uintptr_t>(next) > start) {
    madvise(reinterpret_cast<void*>(start), reinterpret_cast<uintptr_t>(next) - start,
            MADV_POPULATE_READ);
  }
  populated_ = next;
}

void MappedInput::Consumed(const char* upto) {
  // Half a populated stretch ahead of the reader, the next one is mapped.
  if (populated_ - upto < static_cast<ptrdiff_t>(kPopulateBytes / 2) && populated_ < end_) {
    Populate();
  }
  if (upto - dropped_ < static_cast<ptrdiff_t>(kDropBytes)) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto end = reinterpret_cast<uintptr_t>(upto) & ~(page - 1);
  const auto start = reinterpret_cast<uintptr_t>(dropped_) & ~(page - 1);
  if (end > start) {
    madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  }
  dropped_ = reinterpret_cast<const char*>(end);
}

FileInput::FileInput(const MappedFile& file, size_t chunk)
    // A file smaller than a chunk is read whole into a buffer its size: a small trace does not
    // take a huge page.
    : file_(file),
      chunk_(static_cast<size_t>(std::min<uint64_t>(chunk, file.size()))),
      head_(chunk / 4),
      buf_(MakeLargeBuffer(head_ + chunk_)) {
  // The window starts empty: the reader's first More() reads the first chunk.
  begin_ = end_ = buf_.get() + head_;
}

bool FileInput::More(const char* keep) {
  if (mapped_ || read_to_ >= file_.size()) return false;
  const size_t kept = static_cast<size_t>(end_ - keep);
  if (kept > head_) {
    const uint64_t at = read_to_ - kept;
    mapped_.emplace(reinterpret_cast<const char*>(file_.bytes()) + at, file_.size() - at);
    begin_ = mapped_->begin();
    end_ = mapped_->end();
    read_to_ = file_.size();
    return true;
  }
  // The carried-over bytes go just before where the new ones will be, first: they may lie
  // where the new ones are read to.
  char* const out = buf_.get() + head_;
  std::memmove(out - kept, keep, kept);
  begin_ = out - kept;
  end_ = out;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk_, file_.size() - read_to_));
  const size_t got = file_.ReadAt(read_to_, out, want);  // short: the file shrank, it ends here
  end_ = out + got;
  read_to_ += got;
  return got > 0;
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
  for (int i = 0; i < kBuffers; ++i) {
    // Uninitialised: only the huge pages inflate writes to are resident.
    free_.push_back({MakeLargeBuffer(kHead + kChunk), 0});
  }
  thread_ = std::thread([this] { Produce(); });
}

GzipInput::~GzipInput() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GzipInput::Produce() {
  while (true) {
    Chunk chunk;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !free_.empty(); });
      if (stop_) return;
      chunk = std::move(free_.back());
      free_.pop_back();
    }
    std::string error;
    try {
      // One chunk per budget check, so that a bomb is refused after at most kChunk more bytes.
      const size_t before = static_cast<size_t>(state_->next_in - in_);
      chunk.size = Inflate(chunk.mem.get() + kHead, kChunk);
      const size_t read = static_cast<size_t>(state_->next_in - in_) - before;
      error = budget_.Add(read, chunk.size);
    } catch (const ParseError& e) {
      error = e.message;
    }
    {
      std::lock_guard lock(mu_);
      if (!error.empty()) {
        error_ = std::move(error);  // what this chunk held is never read, as before the error
        finished_ = true;
      } else {
        if (chunk.size > 0) ready_.push_back(std::move(chunk));
        finished_ = done_;
      }
    }
    cv_.notify_all();
    if (finished_) return;  // only this thread writes it
  }
}

bool GzipInput::Next(Chunk* chunk) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (!ready_.empty()) {
    *chunk = std::move(ready_.front());
    ready_.pop_front();
    return true;
  }
  if (!error_.empty()) throw ParseError{error_};
  return false;
}

void GzipInput::Release(Chunk chunk) {
  if (!chunk.mem) return;
  {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(chunk));
  }
  cv_.notify_all();
}

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
  const size_t kept = static_cast<size_t>(end_ - keep);
  Chunk next;
  if (!Next(&next)) return false;  // the window stays as it is
  if (kept <= kHead) {
    // The usual case: the carried-over bytes go just before the chunk, which becomes the window.
    char* at = next.mem.get() + kHead - kept;
    if (kept > 0) std::memcpy(at, keep, kept);
    begin_ = at;
    end_ = next.mem.get() + kHead + next.size;
    Release(std::move(current_));
    current_ = std::move(next);
    big_.reset();
    return true;
  }
  // A unit larger than kHead so far: a window of its bytes and at least as many new ones
  // (geometric growth, so a unit of n bytes costs O(n) copies), one chunk at a time.
  const size_t want = std::max(kChunk, kept);
  std::unique_ptr<char[]> window(new char[kept + want + kChunk]);
  std::memcpy(window.get(), keep, kept);
  size_t produced = kept;
  bool more = true;
  while (more) {
    std::memcpy(window.get() + produced, next.mem.get() + kHead, next.size);
    produced += next.size;
    Release(std::move(next));
    next = Chunk{};
    more = produced - kept < want && Next(&next);
  }
  Release(std::move(current_));
  current_ = Chunk{};
  big_ = std::move(window);
  begin_ = big_.get();
  end_ = big_.get() + produced;
  return true;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::filesystem::path& path) {
  const std::string origin = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(origin + ": no such file");
    return absl::PermissionDeniedError(origin + ": cannot open: " + std::strerror(errno));
  }
  // Closed on every path out but success, where the MappedFile owns it.
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) close(fd);
    }
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
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // FileInput's reads: a larger readahead
  closer.fd = -1;
  return std::unique_ptr<MappedFile>(new MappedFile(addr, size, fd));
}

size_t MappedFile::ReadAt(uint64_t offset, char* out, size_t n) const {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(fd_, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw ParseError{std::string("cannot read: ") + std::strerror(errno)};
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

MappedFile::~MappedFile() {
  munmap(addr_, size_);
  close(fd_);
}

}  // namespace devtime::trace::stream
