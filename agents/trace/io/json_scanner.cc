#include "agents/trace/io/json_scanner.h"

#include <cstdlib>

#include "agents/trace/io/json_blocks.h"

namespace devtime::trace::stream {
namespace {

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

// The value of the four hex digits at p; -1 when one is not a hex digit.
int32_t Hex4(const char* p) {
  int32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = Hex(p[i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

// The one-letter escapes \" \\ \/ \b \f \n \r \t and the characters they stand for.
constexpr char kEscapeLetters[] = "\"\\/bfnrt";
constexpr char kEscapedChars[] = "\"\\/\b\f\n\r\t";

#if defined(__SSE2__)
struct Sse2 {
  static void Masks(const char* p, uint64_t* quote, uint64_t* slash, uint64_t* open,
                    uint64_t* close) {
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      auto mask = [&v](char c) {
        return static_cast<uint64_t>(
            static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))));
      };
      *quote |= mask('"') << (16 * k);
      *slash |= mask('\\') << (16 * k);
      *open |= (mask('{') | mask('[')) << (16 * k);
      *close |= (mask('}') | mask(']')) << (16 * k);
    }
  }
  static uint64_t PrefixXor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
  }
};
#endif

}  // namespace

#if defined(__SSE2__)
BlockScan ScanBlocksSse2(const char* p, const char* e, int depth, int level, int max_depth) {
  return ScanBlocks<Sse2>(p, e, depth, level, max_depth);
}

#if defined(DEVTIME_TRACE_AVX2)
namespace {
// True where the AVX2 + PCLMUL units may run (supported, not turned off).
bool UseAvx2() {
  const char* no_avx2 = std::getenv("DEVTIME_TRACE_NO_AVX2");
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
         !(no_avx2 && std::string_view(no_avx2) == "1");
}
}  // namespace
#endif

ScanBlocksFn ScanBlocksFor() {
#if defined(DEVTIME_TRACE_AVX2)
  if (UseAvx2()) return ScanBlocksAvx2;
#endif
  return ScanBlocksSse2;
}

#endif

std::string JsonScanner::Where() const {
  return in_event_ ? "event " + std::to_string(index_) + ": " : std::string();
}

void JsonScanner::Fail(const std::string& what) const { throw ParseError{Where() + what}; }

void JsonScanner::Malformed() const {
  if (p_ < e_) {
    const unsigned char c = static_cast<unsigned char>(*p_);
    Fail(std::string("malformed JSON (unexpected ") +
         (c >= 0x20 && c < 0x7f ? std::string("'") + static_cast<char>(c) + "'"
                                : "byte " + std::to_string(c)) +
         ")");
  }
  Fail("malformed JSON");
}

bool JsonScanner::SkipWsOrEof() {
  while (true) {
    while (p_ < e_ && IsWs(*p_)) ++p_;
    if (p_ < e_) return true;
    if (!in_.More(p_)) return false;
    p_ = in_.begin();
    e_ = in_.end();
  }
}

void JsonScanner::ExpectOnlyWhitespaceLeft() {
  while (true) {
    while (p_ < e_ && IsWs(*p_)) ++p_;
    if (p_ < e_) throw ParseError{"trailing content after the JSON document"};
    if (!in_.More(p_)) break;
    p_ = in_.begin();
    e_ = in_.end();
  }
}

std::string_view JsonScanner::ReadEscapedString(const char* s, const char* q,
                                                std::string* scratch) {
  scratch->clear();
  while (true) {
    scratch->append(s, q);
    if (*q == '"') break;
    if (e_ - q < 2) throw NeedMore{};
    const char c = q[1];
    s = q + 2;
    if (const char* k = std::strchr(kEscapeLetters, c); k != nullptr && c != '\0') {
      scratch->push_back(kEscapedChars[k - kEscapeLetters]);
    } else if (c == 'u') {
      if (e_ - q < 6) throw NeedMore{};
      const int32_t hi = Hex4(q + 2);
      if (hi < 0) Fail("invalid \\u escape in a string");
      auto cp = static_cast<uint32_t>(hi);
      s = q + 6;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (e_ - s < 6) throw NeedMore{};
        const int32_t lo = s[0] == '\\' && s[1] == 'u' ? Hex4(s + 2) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
          s += 6;
        } else {
          cp = 0xFFFD;  // lone high surrogate
        }
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        cp = 0xFFFD;  // lone low surrogate
      }
      AppendUtf8(cp, scratch);
    } else {
      Fail("invalid escape in a string");
    }
    q = FindQuoteOrBackslash(s, e_);
    if (q == e_) throw NeedMore{};
  }
  p_ = q + 1;
  return *scratch;
}

void JsonScanner::SkipStringFrom(const char* s) {
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

void JsonScanner::SkipLiteral(std::string_view word) {
  for (char c : word) {
    if (Peek() != c) Malformed();
    ++p_;
  }
}

void JsonScanner::SkipValue(int depth) {
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

void JsonScanner::SkipNested(int depth) {
  int level = 1;
#if defined(__SSE2__)
  // 64 bytes at a time (json_blocks.h); blocks with a backslash and the window's last < 64
  // bytes take the byte-wise path below.
  static const ScanBlocksFn scan = ScanBlocksFor();
  while (true) {
    const BlockScan r = scan(p_, e_, depth, level, kMaxJsonDepth);
    p_ = r.p;
    level = r.level;
    if (r.stop == BlockScan::kClosed) return;
    if (r.stop == BlockScan::kTooDeep) {
      Fail("JSON nested deeper than the limit of " + std::to_string(kMaxJsonDepth) + " levels");
    }
    if (!r.in_string) break;
    SkipStringFrom(p_);  // finish the open string byte-wise, then continue by blocks
    if (r.stop == BlockScan::kTail) break;
  }
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

}  // namespace devtime::trace::stream
