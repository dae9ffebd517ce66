// devtime::trace internals — the streaming JSON scanner under the Kineto reader: a cursor over
// an Input window that reads strings (unescaped), number tokens and object keys, and skips
// values it is not asked for structurally (strings and bracket depth, 64 bytes at a time with
// SSE2). It knows JSON syntax only; what the fields mean is json_trace_reader.cc's job.
//
// Restartable units: when the window ends inside a unit of work, the scanner throws NeedMore;
// Unit() fetches more input and runs the unit again from its start, so a unit must commit its
// effects only at its end. Errors are ParseError, whose message names the event being read
// (see in_event_).
//
// The hot paths (Peek, Ws, string fast path, ReadObject) are inline here so that the reader's
// event loop inlines them; the slow and large ones are in json_scanner.cc. Both files are
// built with -O3 (CMakeLists.txt).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "agents/trace/io/byte_source.h"
#include "agents/trace/io/json_limits.h"

namespace devtime::trace::stream {

// "The window ends inside the current unit; fetch more input and restart the unit."
struct NeedMore {};

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

inline bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The first byte at or after p that is not IsNumberChar (e when none): 16 bytes at a time, as a
// Kineto timestamp ("1212075549008.000") is longer than the byte loop is cheap for.
inline const char* NumberTokenEnd(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i zero = _mm_set1_epi8('0');
  const __m128i nine = _mm_set1_epi8(9);
  while (e - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i d = _mm_sub_epi8(v, zero);
    const __m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(d, nine), d);  // unsigned d <= 9
    const __m128i other = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')), _mm_cmpeq_epi8(v, _mm_set1_epi8('-'))),
        _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8('+')),
            _mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('e'))));  // e, E
    const int m = ~_mm_movemask_epi8(_mm_or_si128(digit, other)) & 0xFFFF;
    if (m != 0) return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#endif
  while (p < e && IsNumberChar(*p)) ++p;
  return p;
}

class JsonScanner {
 public:
  explicit JsonScanner(Input& in) : in_(in), p_(in.begin()), e_(in.end()) {}

  static bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Runs `f` from the current position; when the window ends inside it, fetches more input and
  // runs it again from the same start. `f` must only commit its effects at its end.
  template <typename F>
  void Unit(F&& f) {
    const char* start = p_;
    unit_start_ = start;
    while (true) {
      try {
        f();
        // A unit read whole from one window (a mapped file) is held to the limit too, also
        // when its values were only skipped.
        CheckUnitSize();
        return;
      } catch (const NeedMore&) {
        if (static_cast<size_t>(e_ - start) > kMaxEventBytes) TooLarge();
        if (!in_.More(start)) {
          throw ParseError{"truncated JSON: the input ends inside " +
                           (in_event_ ? "event " + std::to_string(index_) : "the document")};
        }
        start = in_.begin();
        unit_start_ = start;
        p_ = start;
        e_ = in_.end();
      }
    }
  }

  // ParseError when the current unit, up to the cursor, is larger than kMaxEventBytes. A unit
  // that commits effects calls it before it does, so that the message names what it read.
  void CheckUnitSize() const {
    if (static_cast<size_t>(p_ - unit_start_) > kMaxEventBytes) TooLarge();
  }
  [[noreturn]] void TooLarge() const {
    Fail("larger than the limit of " + std::to_string(kMaxEventBytes >> 20) + " MiB");
  }

  // "event N: " while an event is being read, else empty.
  std::string Where() const;
  [[noreturn]] void Fail(const std::string& what) const;
  // A syntax error naming the byte at the cursor.
  [[noreturn]] void Malformed() const;

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
  // Skips whitespace, fetching input itself (call it outside Unit()); false at the end of the
  // whole input.
  bool SkipWsOrEof();
  // Only whitespace may follow the document: ParseError otherwise.
  void ExpectOnlyWhitespaceLeft();
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
    return ReadEscapedString(s, q, scratch);
  }

  // The string that must come next as the value of `field` (ReadString into `scratch`).
  std::string_view StringField(const char* field, std::string* scratch) {
    if (Peek() != '"') Fail(std::string("field '") + field + "' is not a string");
    return ReadString(scratch);
  }

  void SkipString() { SkipStringFrom(p_ + 1); }
  // Skips the rest of a string whose content starts at `s` (after the opening quote).
  void SkipStringFrom(const char* s);

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
    p_ = NumberTokenEnd(p_, e_);
    if (p_ == e_) throw NeedMore{};
    return std::string_view(s, static_cast<size_t>(p_ - s));
  }

  // Skips one value at nesting `depth` (kMaxJsonDepth is the limit).
  void SkipValue(int depth);
  // Skips to the end of the container whose opening bracket was just consumed, at nesting
  // `depth`. Structural only: strings and bracket depth are tracked, other bytes of values
  // devtime does not read are not validated (torch's own writer is lenient, §6.10).
  void SkipNested(int depth);

  // SkipNested(1) where the rest of the object is flat — no '{', '[', ']' or backslash before
  // its closing '}', as in a flow event after its "ph" or an op's args after its External id —
  // inline, 16 bytes at a time; anything else, and the window's last 16 bytes, go to SkipNested
  // from the same place. Why: SkipNested's 64-byte blocks (an out-of-line AVX2 call) cost more
  // than the ~20-90 bytes these rests hold (12 % of the reader, perf). Same outcome: with no
  // escape, a '}' after an even number of quotes is outside strings, and with no bracket before
  // it, the first such '}' is the one SkipNested(1) stops after.
  void SkipFlatObjectRest() {
#if defined(__SSE2__)
    const char* q = p_;
    uint32_t in_string = 0;  // all ones while the previous 16 bytes ended inside a string
    while (e_ - q >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      auto mask = [&v](char c) {
        return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
      };
      const uint32_t stop = mask('{') | mask('[') | mask(']') | mask('\\');
      uint32_t inside = mask('"');
      inside ^= inside << 1;
      inside ^= inside << 2;
      inside ^= inside << 4;
      inside ^= inside << 8;
      inside = (inside ^ in_string) & 0xFFFF;
      const uint32_t closes = mask('}') & ~inside;
      if (closes != 0) {
        if ((stop & ((closes & (0u - closes)) - 1)) != 0) break;  // a stop before the close
        p_ = q + __builtin_ctz(closes) + 1;
        return;
      }
      if (stop != 0) break;
      in_string = (inside & 0x8000) != 0 ? 0xFFFF : 0;
      q += 16;
    }
#endif
    SkipNested(1);
  }

  // The keys of the object at p_ ('{'), calling on_field(key) with p_ at each value; on_field
  // consumes the value and returns false to skip the rest of the object unread.
  template <typename F>
  void ReadObject(F&& on_field) {
    Expect('{');
    Ws();
    if (Peek() == '}') {
      ++p_;
      return;
    }
    ReadMembers(on_field);
  }
  // The rest of an object read by ReadObject, from just after a member's value (one the caller
  // read itself, say by comparing a literal): as ReadObject goes on after on_field returns true.
  template <typename F>
  void ReadMembersAfterValue(F&& on_field) {
    if (!CloseOrComma('}')) ReadMembers(on_field);
  }

 protected:
  Input& in_;
  const char* p_;                     // cursor in [in_.begin(), in_.end())
  const char* e_;                     // in_.end()
  const char* unit_start_ = nullptr;  // where the current Unit() starts in the window
  // Error context: messages name "event index_" while in_event_ (set by the reader).
  uint64_t index_ = 0;
  bool in_event_ = false;
  std::string key_scratch_;

 private:
  // ReadObject from a member's key at p_ on.
  template <typename F>
  void ReadMembers(F&& on_field) {
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

  // ReadString from the first backslash `q` of the string whose content starts at `s`.
  std::string_view ReadEscapedString(const char* s, const char* q, std::string* scratch);
  void SkipLiteral(std::string_view word);
};

}  // namespace devtime::trace::stream
