// devtime::trace internals — where the streaming trace reader's bytes come from. An Input is a
// window [begin, end) over the trace's JSON text: the whole of it in memory (MemoryInput), a
// memory-mapped file whose consumed pages are dropped (MappedInput), or a gzip stream inflated
// in chunks with ISA-L's igzip on a thread of its own (GzipInput), or a plain file read into one
// reused buffer (FileInput). MappedFile opens and maps the file. Knows nothing of JSON.
//
// Thread-safety: one Input serves one reader on one thread (GzipInput's inflater thread is its
// own business).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/trace/io/large_array.h"

struct inflate_state;  // ISA-L <isa-l/igzip_lib.h>

namespace devtime::trace::stream {

// An error of the streaming reader, from its input (corrupt gzip) or its scanner (bad JSON).
// Internal control flow: it never leaves the library (the reader's Parse() makes it a Status).
struct ParseError {
  std::string message;
};

// A window of input bytes [begin, end). More() drops the bytes before `keep`, appends more
// and moves `keep` to the new begin(); false at the end of the input.
class Input {
 public:
  virtual ~Input() = default;
  const char* begin() const { return begin_; }
  const char* end() const { return end_; }
  virtual bool More(const char* keep) = 0;
  // The parser no longer needs the bytes before `upto`.
  virtual void Consumed(const char* upto) { (void)upto; }

 protected:
  const char* begin_ = nullptr;
  const char* end_ = nullptr;
};

class MemoryInput : public Input {
 public:
  MemoryInput(const char* data, size_t size) {
    begin_ = data;
    end_ = data + size;
  }
  bool More(const char*) override { return false; }
};

// A memory-mapped file: consumed pages are dropped every kDropBytes so that the resident set
// stays small however large the file is (they are re-read from the page cache if touched), and
// the pages kPopulateBytes ahead of the reader are mapped in one call (MADV_POPULATE_READ)
// rather than one fault at a time: a page not yet mapped stops the CPU's prefetchers, and the
// faults and page clearing were ~10 % of a summary's CPU time (perf).
class MappedInput : public MemoryInput {
 public:
  static constexpr size_t kDropBytes = size_t{64} << 20;
  static constexpr size_t kPopulateBytes = size_t{8} << 20;
  MappedInput(const char* data, size_t size);
  void Consumed(const char* upto) override;

 private:
  // Maps the pages of [populated_, populated_ + kPopulateBytes) (within the file).
  void Populate();
  const char* dropped_;
  const char* populated_;
};

class MappedFile;

// A plain file read with pread() into one reused buffer, `chunk` bytes at a time after `chunk / 4`
// bytes of room for the unfinished unit carried over (usually part of one event). Why not the
// mapping: on the VMs devtime is measured on, loads from a file mapped in 4 KiB pages cost far
// more than the kernel's copy into a buffer that stays in L2 (touching every line of a mapped
// 256 MB file: 0.105 s CPU with MADV_POPULATE_READ as MappedInput does it; pread into a 256 KiB
// buffer and the same loads: 0.015 s). A unit larger than that room (an event with a huge name
// or args) switches the window to the mapping, from that unit to the end of the file (as
// MappedInput): it then costs no anonymous memory however large it is.
class FileInput : public Input {
 public:
  static constexpr size_t kChunk = size_t{256} << 10;
  // `file` outlives the input; `chunk` > 0 (tests use small ones).
  explicit FileInput(const MappedFile& file, size_t chunk = kChunk);
  bool More(const char* keep) override;
  void Consumed(const char* upto) override {
    if (mapped_) mapped_->Consumed(upto);
  }

 private:
  const MappedFile& file_;
  const size_t chunk_;
  const size_t head_;
  LargeBuffer buf_;                    // head_ + chunk_ bytes (a huge page: large_array.h)
  uint64_t read_to_ = 0;               // the file offset of end_
  std::optional<MappedInput> mapped_;  // the window once a unit outgrew head_
};

// What a gzip stream may inflate to (README "Limits"). A decompression bomb costs memory
// (the window grows while one unit is unfinished) and CPU; real traces compress 13-29x (the 1 GB
// benchmark trace: 14.8x), deflate at most ~1032x (a run of one byte).
//  * kMaxGunzippedBytes: 4 GiB, 4x the largest trace benchmarked; inflating it takes ~15 s and
//    its events alone would need ~1.4 GB of RawTrace and summarizer memory.
//  * kMaxGunzipRatio: 200x the compressed bytes read so far, checked once more than
//    kGunzipRatioFreeBytes (64 MiB) came out: 7x above the most compressible real trace, far
//    below what filler (spaces, one repeated event) reaches, so a bomb is refused after 64 MiB.
inline constexpr uint64_t kMaxGunzippedBytes = uint64_t{4} << 30;
inline constexpr uint64_t kMaxGunzipRatio = 200;
inline constexpr uint64_t kGunzipRatioFreeBytes = uint64_t{64} << 20;

// Counts one gzip stream's compressed bytes read and bytes inflated (all members together).
class GunzipBudget {
 public:
  // Adds `in` compressed and `out` inflated bytes; the error text ("gzip stream inflates to
  // more than ...") once a limit above is passed, else empty.
  std::string Add(uint64_t in, uint64_t out);

 private:
  uint64_t in_ = 0;
  uint64_t out_ = 0;
};

// Inflates a gzip stream (concatenated members allowed) with ISA-L's igzip (2-3x zlib's inflate,
// which bounded the .gz path at ~290 MB/s) on a thread of its own, kChunk bytes at a time, at
// most kBuffers chunks ahead of the reader: inflating costs about a third of parsing, so on a
// second core the reader no longer waits for it (wall time; the CPU time of both threads is
// what it was). Throws ParseError for a truncated or corrupt stream and one past the
// GunzipBudget limits, from the More() that reaches the chunk where the inflater found it.
// Chunks are never zero-filled: pages inflate did not write are never touched, so refusing a
// bomb costs at most the window and kBuffers chunks.
class GzipInput : public Input {
 public:
  // Room before each chunk for the unfinished unit More() carries over (usually part of one
  // event), so that the chunk the inflater wrote becomes the window without being copied.
  static constexpr size_t kHead = size_t{64} << 10;
  // Room and chunk are 4 MiB: two huge pages (io/large_array.h; in 4 KiB pages the first
  // fill of the 3 chunks faulted ~3,100 times, ~15 us each on the VMs measured).
  static constexpr size_t kChunk = (size_t{4} << 20) - kHead;
  static constexpr int kBuffers = 3;

  GzipInput(const unsigned char* data, size_t size);
  ~GzipInput() override;
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  bool More(const char* keep) override;

 private:
  // kHead bytes of room, then `size` inflated bytes.
  struct Chunk {
    LargeBuffer mem;
    size_t size = 0;
  };
  // The inflater thread: fills free chunks until the stream ends, fails or stop_.
  void Produce();
  // Inflates into [out, out + size) from the compressed bytes not yet read; returns the bytes
  // written (0 only at the end of the stream, done_ then true). Inflater thread only.
  size_t Inflate(char* out, size_t size);
  // The next inflated chunk (false at the end of the stream); throws the inflater's error.
  bool Next(Chunk* chunk);
  void Release(Chunk chunk);

  // The inflater thread's own.
  std::unique_ptr<inflate_state> state_;  // ~80 KiB: on the heap
  const unsigned char* in_;
  size_t in_size_;
  size_t consumed_ = 0;
  bool done_ = false;
  GunzipBudget budget_;

  // Shared, guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Chunk> free_;
  std::deque<Chunk> ready_;
  bool finished_ = false;  // the inflater has posted its last chunk (or error_)
  std::string error_;      // its ParseError message
  bool stop_ = false;      // the reader is gone: the inflater stops

  // The reader's window: a chunk, or (a unit larger than kHead carried over) big_.
  Chunk current_;
  std::unique_ptr<char[]> big_;
  std::thread thread_;  // last: starts once everything above is built
};

// True when the bytes start with the gzip magic 1f 8b (whatever the file is called).
inline bool IsGzip(const unsigned char* bytes, size_t size) {
  return size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

// A regular, non-empty file mapped read-only for sequential reading; unmapped and closed on
// destruction.
class MappedFile {
 public:
  // kNotFound (no such file), kPermissionDenied (cannot open), kInvalidArgument (not a regular
  // file, empty file), kInternal (stat or mmap failed); messages start with the path.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr_); }
  size_t size() const { return size_; }
  // Reads up to `n` bytes at `offset` into `out` with pread() (retried on EINTR and short
  // reads): fewer only where the file ends (or shrank since it was opened). Throws ParseError
  // naming the system's error.
  size_t ReadAt(uint64_t offset, char* out, size_t n) const;

 private:
  MappedFile(void* addr, size_t size, int fd) : addr_(addr), size_(size), fd_(fd) {}
  void* addr_;
  size_t size_;
  int fd_;  // open until destruction, for ReadAt
};

}  // namespace devtime::trace::stream
