// devtime::trace internals — how reader error messages quote the input they refuse. A value
// from a trace can be as large as the per-event limit (256 MiB) or a million-digit number:
// echoed whole it makes a message too large to log or send. Every reader quotes input through
// Quote(), which keeps at most kMaxQuotedBytes of it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace devtime::trace {

inline constexpr size_t kMaxQuotedBytes = 200;

// `text` itself when it has at most kMaxQuotedBytes bytes; else its first kMaxQuotedBytes
// bytes, cut back to a UTF-8 character boundary, then "… (N bytes)" with the original length.
inline std::string Quote(std::string_view text) {
  if (text.size() <= kMaxQuotedBytes) return std::string(text);
  size_t cut = kMaxQuotedBytes;
  // Continuation bytes are 10xxxxxx: never cut between a lead byte and them.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "\u2026 (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace devtime::trace
