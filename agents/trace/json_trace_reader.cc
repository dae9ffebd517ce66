#include "agents/trace/json_trace_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "agents/trace/timestamp.h"

namespace devtime::trace {
namespace {

// Internal control flow of the parser (never leaves this file): a syntax or content error,
// and "the window ends inside the current unit; fetch more input and restart the unit".
struct ParseError {
  std::string message;
};
struct NeedMore {};

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
  void Consumed(const char* upto) override {
    if (upto - dropped_ < static_cast<ptrdiff_t>(kDropBytes)) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto end = reinterpret_cast<uintptr_t>(upto) & ~(page - 1);
    const auto start = reinterpret_cast<uintptr_t>(dropped_) & ~(page - 1);
    if (end > start) {
      madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
    }
    dropped_ = reinterpret_cast<const char*>(end);
  }

 private:
  const char* dropped_;
};

// Inflates a gzip stream (concatenated members allowed) in chunks of kChunk bytes.
class GzipInput : public Input {
 public:
  static constexpr size_t kChunk = size_t{4} << 20;

  GzipInput(const unsigned char* data, size_t size) : in_(data), in_size_(size) {
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw ParseError{"cannot initialise zlib"};
    begin_ = end_ = buf_.data();
  }
  ~GzipInput() override { inflateEnd(&zs_); }
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  bool More(const char* keep) override {
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

 private:
  z_stream zs_{};
  const unsigned char* in_;
  size_t in_size_;
  size_t consumed_ = 0;
  bool done_ = false;
  std::vector<char> buf_;
};

inline const char* FindQuoteOrBackslash(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int m =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)));
    if (m != 0) return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#endif
  while (p < e && *p != '"' && *p != '\\') ++p;
  return p;
}

// The next '"', '{', '}', '[' or ']' at or after p (e when none).
inline const char* FindStructural(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open_brace = _mm_set1_epi8('{');
  const __m128i close_brace = _mm_set1_epi8('}');
  const __m128i open_bracket = _mm_set1_epi8('[');
  const __m128i close_bracket = _mm_set1_epi8(']');
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i any = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, open_brace)),
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, close_brace), _mm_cmpeq_epi8(v, open_bracket)),
                     _mm_cmpeq_epi8(v, close_bracket)));
    const int m = _mm_movemask_epi8(any);
    if (m != 0) return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#endif
  while (p < e && *p != '"' && *p != '{' && *p != '}' && *p != '[' && *p != ']') ++p;
  return p;
}

// key == literal, with the literal's length known at compile time (inlined compare).
template <size_t N>
inline bool Is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

inline bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// args.correlation / args["External id"]: an integer or a string of digits (AMD traces);
// anything else (floats, out of int64 range) reads as absent (-1).
int64_t IdFromText(std::string_view s) {
  if (s.empty() || s.size() > 19) return -1;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v);
}

class Parser {
 public:
  Parser(Input& in, const TraceReadOptions& options, RawTrace* trace)
      : in_(in), options_(options), trace_(trace), p_(in.begin()), e_(in.end()) {}

  void Run() {
    bool empty = false;
    Unit([&] {
      if (!SkipWsOrEof()) {
        empty = true;
        return;
      }
      const char c = *p_;
      if (c != '[' && c != '{') {
        throw ParseError{c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
                                 c == 'n'
                             ? "top-level JSON value is neither an event array nor an object"
                             : "not JSON (unexpected character at offset 0)"};
      }
    });
    if (empty) throw ParseError{"empty file (0 bytes of JSON)"};
    if (*p_ == '[') {
      trace_->format = "legacy-array";
      ReadEventArray();
    } else {
      trace_->format = "kineto-json";
      ReadTopObject();
    }
    // Only whitespace may follow.
    while (true) {
      while (p_ < e_ && IsWs(*p_)) ++p_;
      if (p_ < e_) throw ParseError{"trailing content after the JSON document"};
      if (!in_.More(p_)) break;
      p_ = in_.begin();
      e_ = in_.end();
    }
    trace_->total_events = index_;
  }

 private:
  static bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Runs `f` from the current position; when the window ends inside it, fetches more input and
  // runs it again from the same start. `f` must only commit its effects at its end.
  template <typename F>
  void Unit(F&& f) {
    const char* start = p_;
    while (true) {
      try {
        f();
        return;
      } catch (const NeedMore&) {
        if (static_cast<size_t>(e_ - start) > kMaxEventBytes) {
          throw ParseError{Where() + "larger than the limit of " +
                           std::to_string(kMaxEventBytes >> 20) + " MiB"};
        }
        if (!in_.More(start)) {
          throw ParseError{"truncated JSON: the input ends inside " +
                           (in_event_ ? "event " + std::to_string(index_) : "the document")};
        }
        start = in_.begin();
        p_ = start;
        e_ = in_.end();
      }
    }
  }

  std::string Where() const {
    return in_event_ ? "event " + std::to_string(index_) + ": " : std::string();
  }
  [[noreturn]] void Fail(const std::string& what) const { throw ParseError{Where() + what}; }
  [[noreturn]] void Malformed() const {
    if (p_ < e_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      Fail(std::string("malformed JSON (unexpected ") +
           (c >= 0x20 && c < 0x7f ? std::string("'") + static_cast<char>(c) + "'"
                                  : "byte " + std::to_string(c)) +
           ")");
    }
    Fail("malformed JSON");
  }

  char Peek() {
    if (p_ == e_) throw NeedMore{};
    return *p_;
  }
  void Ws() {
    while (true) {
      if (p_ == e_) throw NeedMore{};
      if (!IsWs(*p_)) return;
      ++p_;
    }
  }
  // Skips whitespace; false at the end of the whole input.
  bool SkipWsOrEof() {
    while (true) {
      while (p_ < e_ && IsWs(*p_)) ++p_;
      if (p_ < e_) return true;
      if (!in_.More(p_)) return false;
      p_ = in_.begin();
      e_ = in_.end();
    }
  }
  void Expect(char c) {
    if (Peek() != c) Malformed();
    ++p_;
  }
  // After a value in an array or object: true past the closing `close`, false past a ',' and
  // the whitespace after it.
  bool CloseOrComma(char close) {
    Ws();
    const char n = Peek();
    if (n == close) {
      ++p_;
      return true;
    }
    if (n != ',') Malformed();
    ++p_;
    Ws();
    return false;
  }

  // A JSON string at p_ (the opening quote). Returns its unescaped content: a view of the input
  // when it has no escapes, else of `scratch`.
  std::string_view ReadString(std::string* scratch) {
    const char* s = p_ + 1;
    const char* q = FindQuoteOrBackslash(s, e_);
    if (q == e_) throw NeedMore{};
    if (*q == '"') {
      p_ = q + 1;
      return std::string_view(s, static_cast<size_t>(q - s));
    }
    scratch->clear();
    while (true) {
      scratch->append(s, q);
      if (*q == '"') break;
      if (e_ - q < 2) throw NeedMore{};
      const char c = q[1];
      s = q + 2;
      switch (c) {
        case '"':
        case '\\':
        case '/':
          scratch->push_back(c);
          break;
        case 'b':
          scratch->push_back('\b');
          break;
        case 'f':
          scratch->push_back('\f');
          break;
        case 'n':
          scratch->push_back('\n');
          break;
        case 'r':
          scratch->push_back('\r');
          break;
        case 't':
          scratch->push_back('\t');
          break;
        case 'u': {
          if (e_ - q < 6) throw NeedMore{};
          uint32_t cp = 0;
          for (int i = 2; i < 6; ++i) {
            const int h = Hex(q[i]);
            if (h < 0) Fail("invalid \\u escape in a string");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          s = q + 6;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (e_ - s < 6) throw NeedMore{};
            uint32_t lo = 0;
            bool ok = s[0] == '\\' && s[1] == 'u';
            for (int i = 2; ok && i < 6; ++i) {
              const int h = Hex(s[i]);
              ok = h >= 0;
              lo = lo * 16 + static_cast<uint32_t>(h);
            }
            if (ok && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              s += 6;
            } else {
              cp = 0xFFFD;  // lone high surrogate
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;  // lone low surrogate
          }
          AppendUtf8(cp, scratch);
          break;
        }
        default:
          Fail("invalid escape in a string");
      }
      q = FindQuoteOrBackslash(s, e_);
      if (q == e_) throw NeedMore{};
    }
    p_ = q + 1;
    return *scratch;
  }

  void SkipString() { SkipStringFrom(p_ + 1); }

  // Skips the rest of a string whose content starts at `s` (after the opening quote).
  void SkipStringFrom(const char* s) {
    while (true) {
      const char* q = FindQuoteOrBackslash(s, e_);
      if (q == e_) throw NeedMore{};
      if (*q == '"') {
        p_ = q + 1;
        return;
      }
      if (e_ - q < 2) throw NeedMore{};
      s = q + 2;
    }
  }

  // The raw text of the number that must come next as the value of `field`.
  std::string_view NumberField(const char* field) {
    const char c = Peek();
    if (!(c == '-' || (c >= '0' && c <= '9'))) {
      Fail(std::string("field '") + field + "' is not a number");
    }
    return NumberToken();
  }

  std::string_view NumberToken() {
    const char* s = p_;
    while (true) {
      if (p_ == e_) throw NeedMore{};
      if (!IsNumberChar(*p_)) break;
      ++p_;
    }
    return std::string_view(s, static_cast<size_t>(p_ - s));
  }

  void SkipLiteral(std::string_view word) {
    for (char c : word) {
      if (Peek() != c) Malformed();
      ++p_;
    }
  }

  void SkipValue(int depth) {
    if (depth > kMaxJsonDepth) {
      Fail("JSON nested deeper than the limit of " + std::to_string(kMaxJsonDepth) + " levels");
    }
    const char c = Peek();
    if (c == '"') {
      SkipString();
    } else if (c == '{' || c == '[') {
      ++p_;
      SkipNested(depth);
    } else if (c == 't') {
      SkipLiteral("true");
    } else if (c == 'f') {
      SkipLiteral("false");
    } else if (c == 'n') {
      SkipLiteral("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      NumberToken();
    } else {
      Malformed();
    }
  }

  // Skips to the end of the container whose opening bracket was just consumed, at nesting
  // `depth`. Structural only: strings and bracket depth are tracked, other bytes of values
  // devtime does not read are not validated (torch's own writer is lenient, §6.10).
  void SkipNested(int depth) {
    int level = 1;
#if defined(__SSE2__)
    // 64 bytes at a time: bit masks of quotes and brackets; the prefix XOR of the quote mask
    // marks the bytes inside strings, whose brackets do not count. Blocks with a backslash (or
    // the window's last < 64 bytes) take the byte-wise path below.
    uint64_t in_string = 0;  // all ones while the previous block ended inside a string
    while (e_ - p_ >= 64) {
      uint64_t quote = 0, slash = 0, open = 0, close = 0;
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_ + 16 * k));
        auto mask = [&v](char c) {
          return static_cast<uint64_t>(
              static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))));
        };
        quote |= mask('"') << (16 * k);
        slash |= mask('\\') << (16 * k);
        open |= (mask('{') | mask('[')) << (16 * k);
        close |= (mask('}') | mask(']')) << (16 * k);
      }
      if (slash != 0) {
        if (in_string == 0) break;
        SkipStringFrom(p_);  // finish the open string byte-wise, then continue by blocks
        in_string = 0;
        continue;
      }
      uint64_t inside = quote;
      inside ^= inside << 1;
      inside ^= inside << 2;
      inside ^= inside << 4;
      inside ^= inside << 8;
      inside ^= inside << 16;
      inside ^= inside << 32;
      inside ^= in_string;
      open &= ~inside;
      close &= ~inside;
      uint64_t brackets = open | close;
      while (brackets != 0) {
        const int bit = __builtin_ctzll(brackets);
        brackets &= brackets - 1;
        if ((open >> bit) & 1) {
          if (depth + ++level > kMaxJsonDepth) {
            Fail("JSON nested deeper than the limit of " + std::to_string(kMaxJsonDepth) +
                 " levels");
          }
        } else if (--level == 0) {
          p_ += bit + 1;
          return;
        }
      }
      in_string = (inside >> 63) ? ~uint64_t{0} : 0;
      p_ += 64;
    }
    if (in_string != 0) SkipStringFrom(p_);
#endif
    while (true) {
      const char* q = FindStructural(p_, e_);
      if (q == e_) {
        p_ = q;
        throw NeedMore{};
      }
      p_ = q;
      const char c = *q;
      if (c == '"') {
        SkipString();
      } else if (c == '{' || c == '[') {
        ++p_;
        if (depth + ++level > kMaxJsonDepth) {
          Fail("JSON nested deeper than the limit of " + std::to_string(kMaxJsonDepth) + " levels");
        }
      } else {
        ++p_;
        if (--level == 0) return;
      }
    }
  }

  // The keys of the object at p_ ('{'), calling on_field(key) with p_ at each value; on_field
  // consumes the value.
  template <typename F>
  void ReadObject(F&& on_field) {
    Expect('{');
    Ws();
    if (Peek() == '}') {
      ++p_;
      return;
    }
    while (true) {
      if (Peek() != '"') Malformed();
      const std::string_view key = ReadString(&key_scratch_);
      Ws();
      Expect(':');
      Ws();
      if (!on_field(key)) {
        SkipNested(1);
        return;
      }
      if (CloseOrComma('}')) return;
    }
  }

  int64_t ReadOptionalId() {
    const char c = Peek();
    if (c == '"') return IdFromText(ReadString(&id_scratch_));
    if (c == '-' || (c >= '0' && c <= '9')) return IdFromText(NumberToken());
    SkipValue(1);
    return -1;
  }

  // Direct-mapped cache in front of the string table for event names: a cheap hash of the
  // length and the first and last 8 bytes, then one comparison.
  struct NameSlot {
    std::string text;
    uint32_t id = 0;
  };
  static size_t CheapHash(std::string_view s) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, s.data(), std::min<size_t>(8, s.size()));
    if (s.size() > 8) std::memcpy(&b, s.data() + s.size() - 8, 8);
    const uint64_t h = (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL) ^ s.size();
    return static_cast<size_t>(h >> 52);  // 12 bits
  }
  uint32_t InternFast(std::string_view s, const char* field) {
    NameSlot& slot = name_cache_[CheapHash(s)];
    if (slot.text.size() == s.size() && slot.text == s && !slot.text.empty()) return slot.id;
    const uint32_t id = InternChecked(s, field);
    slot.text.assign(s);
    slot.id = id;
    return id;
  }

  uint32_t InternChecked(std::string_view s, const char* field) {
    if (std::optional<uint32_t> id = trace_->strings.Find(s)) return *id;
    if (!simdjson::validate_utf8(s.data(), s.size())) {
      Fail(std::string("field '") + field + "' is not valid UTF-8");
    }
    return trace_->strings.Intern(s);
  }
  // True when events of category `cat` are not kept (TraceReadOptions::keep_categories).
  bool Dropped(std::string_view cat) {
    if (!options_.keep_categories || cat.empty()) return false;
    return !KeepCategory(InternFast(cat, "cat"));
  }

  bool IsHostCategory(std::string_view cat) {
    if (!options_.host_categories || cat.empty()) return false;
    const uint32_t id = InternFast(cat, "cat");
    if (id >= host_cat_.size()) host_cat_.resize(id + 1, -1);
    if (host_cat_[id] < 0) {
      host_cat_[id] = options_.host_categories->contains(trace_->strings.Get(id)) ? 1 : 0;
    }
    return host_cat_[id] == 1;
  }

  bool KeepCategory(uint32_t cat) {
    if (!options_.keep_categories || cat == 0) return true;
    if (cat >= keep_cat_.size()) keep_cat_.resize(cat + 1, -1);
    if (keep_cat_[cat] < 0) {
      keep_cat_[cat] = options_.keep_categories->contains(trace_->strings.Get(cat)) ? 1 : 0;
    }
    return keep_cat_[cat] == 1;
  }

  void ReadEvent() {
    if (Peek() != '{') {
      // Consume the value to say precisely what it is not.
      Fail("not a JSON object");
    }
    std::string_view ph, name, cat, ts, dur, pid, tid;
    bool has_ph = false, has_name = false, has_cat = false;
    bool skipped = false;  // a category the caller does not keep: the rest is skipped unread
    int64_t correlation = -1, external_id = -1;
    ReadObject([&](std::string_view key) {
      switch (key.size()) {
        case 2:
          if (Is(key, "ph")) {
            if (Peek() != '"') Fail("field 'ph' is not a string");
            ph = ReadString(&scratch_[0]);
            has_ph = true;
            return !(has_cat && (skipped = Dropped(cat)));
          }
          if (Is(key, "ts")) {
            ts = NumberField("ts");
            return true;
          }
          break;
        case 3:
          if (Is(key, "cat")) {
            if (Peek() != '"') Fail("field 'cat' is not a string");
            cat = ReadString(&scratch_[1]);
            has_cat = true;
            return !(has_ph && (skipped = Dropped(cat)));
          }
          if (Is(key, "dur")) {
            dur = NumberField("dur");
            return true;
          }
          if (Is(key, "pid") || Is(key, "tid")) {
            std::string_view& out = Is(key, "pid") ? pid : tid;
            const char c = Peek();
            if (c == '"') {
              out = ReadString(&scratch_[Is(key, "pid") ? 2 : 3]);
            } else if (c == '-' || (c >= '0' && c <= '9')) {
              out = NumberToken();
            } else {
              Fail("field '" + std::string(key) + "' is not a string or number");
            }
            return true;
          }
          break;
        case 4:
          if (Is(key, "name")) {
            if (Peek() != '"') Fail("field 'name' is not a string");
            name = ReadString(&scratch_[4]);
            has_name = true;
            return true;
          }
          if (Is(key, "args") && Peek() == '{') {
            // Once the ids this category can use are read, the rest of args is skipped
            // structurally: host ops use External id, runtime events correlation, device
            // events both (summarizer.cc). Unknown category (cat after args): read all.
            const bool runtime = has_cat && (cat.ends_with("_runtime") || cat.ends_with("_driver"));
            const bool host = has_cat && !runtime && IsHostCategory(cat);
            bool want_corr = !host;
            bool want_ext = !runtime;
            ReadObject([&](std::string_view arg) {
              if (Is(arg, "correlation")) {
                correlation = ReadOptionalId();
                want_corr = false;
              } else if (Is(arg, "External id")) {
                external_id = ReadOptionalId();
                want_ext = false;
              } else {
                SkipValue(3);
                return true;
              }
              return want_corr || want_ext;
            });
            return true;
          }
          break;
        default:
          break;
      }
      SkipValue(2);
      return true;
    });
    // Commit: the whole event is in the window, nothing below reads input.
    if (!has_ph) Fail("missing field 'ph'");
    if (index_ >= kMaxEvents) Fail("more than " + std::to_string(kMaxEvents) + " events (limit)");
    if (skipped) {
      if (ph == "X") ++trace_->complete_events;
      ++index_;
      return;
    }
    if (ph != "X") {  // M, i, s, f, C, ...: not timed
      ++index_;
      return;
    }
    if (!has_name) Fail("missing field 'name'");
    if (ts.empty()) Fail("missing field 'ts'");
    if (dur.empty()) Fail("missing field 'dur'");
    std::optional<int64_t> t = ParseMicrosToNanos(ts);
    if (!t) Fail("field 'ts' is not a valid time: " + std::string(ts));
    std::optional<int64_t> d = ParseMicrosToNanos(dur);
    if (!d) Fail("field 'dur' is not a valid time: " + std::string(dur));
    ++trace_->complete_events;
    RawEvent ev;
    ev.cat = has_cat ? InternFast(cat, "cat") : 0;
    if (KeepCategory(ev.cat)) {
      ev.name = InternFast(name, "name");
      ev.pid = pid.data() ? InternFast(pid, "pid") : 0;
      ev.tid = tid.data() ? InternFast(tid, "tid") : 0;
      ev.index = index_;
      ev.ts_ns = *t;
      ev.dur_ns = *d;
      ev.correlation = correlation;
      ev.external_id = external_id;
      trace_->events.push_back(ev);
    }
    ++index_;
  }

  void ReadEventArray() {
    Unit([&] {
      Expect('[');
      Ws();
    });
    bool done = false;
    Unit([&] {
      Ws();
      if (Peek() == ']') {
        ++p_;
        done = true;
      }
    });
    while (!done) {
      in_event_ = true;
      Unit([&] { ReadEvent(); });
      in_.Consumed(p_);
      in_event_ = true;
      Unit([&] { done = CloseOrComma(']'); });
      in_event_ = false;
    }
  }

  void ReadTopObject() {
    bool done = false;
    bool saw_events = false;
    Unit([&] {
      Expect('{');
      Ws();
      if (Peek() == '}') {
        ++p_;
        done = true;
      }
    });
    while (!done) {
      std::string key;
      Unit([&] {
        if (Peek() != '"') Malformed();
        key.assign(ReadString(&key_scratch_));
        Ws();
        Expect(':');
        Ws();
      });
      if (key == "traceEvents") {
        bool is_array = true;
        Unit([&] { is_array = Peek() == '['; });
        if (!is_array) throw ParseError{"'traceEvents' is not an array"};
        ReadEventArray();
        saw_events = true;
      } else if (key == "baseTimeNanoseconds") {
        Unit([&] {
          const std::string_view tok =
              Peek() == '-' || (*p_ >= '0' && *p_ <= '9') ? NumberToken() : std::string_view();
          const int64_t v = IdFromText(tok);
          if (v < 0) throw ParseError{"'baseTimeNanoseconds' is not an integer"};
          trace_->base_time_ns = v;
        });
      } else if (key == "deviceProperties") {
        Unit([&] {
          if (Peek() != '[') {
            SkipValue(1);
            return;
          }
          uint64_t n = 0;
          ++p_;
          Ws();
          if (Peek() != ']') {
            while (true) {
              SkipValue(2);
              ++n;
              Ws();
              const char c = Peek();
              if (c == ']') break;
              if (c != ',') Malformed();
              ++p_;
              Ws();
            }
          }
          ++p_;
          trace_->device_properties_count = n;
        });
      } else {
        Unit([&] { SkipValue(1); });
      }
      Unit([&] { done = CloseOrComma('}'); });
    }
    if (!saw_events) throw ParseError{"JSON object has no 'traceEvents' array"};
  }

  Input& in_;
  const TraceReadOptions& options_;
  RawTrace* trace_;
  const char* p_;
  const char* e_;
  uint64_t index_ = 0;
  bool in_event_ = false;
  std::string key_scratch_, id_scratch_;
  std::string scratch_[5];
  std::vector<int8_t> keep_cat_;
  std::vector<int8_t> host_cat_;
  std::vector<NameSlot> name_cache_ = std::vector<NameSlot>(4096);
};

// `size_hint`: JSON bytes expected (0: unknown). Reserving room for the events up front avoids
// the vector's grow-and-copy peak; untouched reserved pages cost address space, not memory.
absl::StatusOr<RawTrace> Parse(Input& in, const std::string& origin,
                               const TraceReadOptions& options, uint64_t size_hint) {
  RawTrace trace;
  constexpr uint64_t kMinEventBytes = 100;  // smaller than any real Kineto event
  trace.events.reserve(
      static_cast<size_t>(std::min<uint64_t>(size_hint / kMinEventBytes, 64u << 20)));
  try {
    Parser parser(in, options, &trace);
    parser.Run();
  } catch (const ParseError& e) {
    return absl::InvalidArgumentError(origin + ": " + e.message);
  }
  return trace;
}

struct Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

StringTable::StringTable() {
  strings_.emplace_back();
  ids_.emplace(std::string(), 0);
}

uint32_t StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(std::string(s), id);
  return id;
}

absl::StatusOr<RawTrace> ParseTraceJson(const char* data, size_t size, const std::string& origin,
                                        const TraceReadOptions& options) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    try {
      GzipInput in(bytes, size);
      return Parse(in, origin, options, uint64_t{size} * 20);  // typical ratio 13-29x (§5)
    } catch (const ParseError& e) {                            // zlib initialisation
      return absl::InvalidArgumentError(origin + ": " + e.message);
    }
  }
  MemoryInput in(data, size);
  return Parse(in, origin, options, size);
}

absl::StatusOr<RawTrace> ReadTraceFile(const std::filesystem::path& path,
                                       const TraceReadOptions& options) {
  const std::string origin = path.string();
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(origin + ": no such file");
    return absl::PermissionDeniedError(origin + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(f.fd, &st) != 0) {
    return absl::InternalError(origin + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(origin + ": not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return absl::InvalidArgumentError(origin + ": empty file (0 bytes of JSON)");
  Mapping map;
  map.addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (map.addr == MAP_FAILED) {
    return absl::InternalError(origin + ": cannot map: " + std::strerror(errno));
  }
  map.size = size;
  madvise(map.addr, size, MADV_SEQUENTIAL);
  const auto* bytes = static_cast<const unsigned char*>(map.addr);
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    try {
      GzipInput in(bytes, size);
      return Parse(in, origin, options, uint64_t{size} * 20);  // typical ratio 13-29x (§5)
    } catch (const ParseError& e) {                            // zlib initialisation
      return absl::InvalidArgumentError(origin + ": " + e.message);
    }
  }
  MappedInput in(static_cast<const char*>(map.addr), size);
  return Parse(in, origin, options, size);
}

}  // namespace devtime::trace
