// devtime::trace internals — where the streaming trace reader's bytes come from. An Input is a
// window [begin, end) over the trace's JSON text: the whole of it in memory (MemoryInput), a
// memory-mapped file whose consumed pages are dropped (MappedInput), or a gzip stream inflated
// in chunks with ISA-L's igzip (GzipInput). MappedFile opens and maps the file. Knows nothing of
// JSON.
//
// Thread-safety: one Input serves one reader on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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
// stays small however large the file is (they are re-read from the page cache if touched).
class MappedInput : public MemoryInput {
 public:
  static constexpr size_t kDropBytes = size_t{64} << 20;
  MappedInput(const char* data, size_t size) : MemoryInput(data, size), dropped_(data) {}
  void Consumed(const char* upto) override;

 private:
  const char* dropped_;
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

// Inflates a gzip stream (concatenated members allowed) in chunks of kChunk bytes with ISA-L's
// igzip (2-3x zlib's inflate, which bounded the .gz path at ~290 MB/s). Throws ParseError for a
// truncated or corrupt stream and one past the GunzipBudget limits (from More()). The window is
// never zero-filled: pages a chunk did not write are never touched, so refusing a bomb costs at
// most the window and one chunk.
class GzipInput : public Input {
 public:
  static constexpr size_t kChunk = size_t{4} << 20;

  GzipInput(const unsigned char* data, size_t size);
  ~GzipInput() override;
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  bool More(const char* keep) override;

 private:
  // Inflates into [out, out + size) from the compressed bytes not yet read; returns the bytes
  // written (0 only at the end of the stream, done_ then true).
  size_t Inflate(char* out, size_t size);

  std::unique_ptr<inflate_state> state_;  // ~80 KiB: on the heap
  const unsigned char* in_;
  size_t in_size_;
  size_t consumed_ = 0;
  bool done_ = false;
  GunzipBudget budget_;
  std::unique_ptr<char[]> buf_;
};

// True when the bytes start with the gzip magic 1f 8b (whatever the file is called).
inline bool IsGzip(const unsigned char* bytes, size_t size) {
  return size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

// A regular, non-empty file mapped read-only for sequential reading; unmapped on destruction.
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

 private:
  MappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  void* addr_;
  size_t size_;
};

}  // namespace devtime::trace::stream
