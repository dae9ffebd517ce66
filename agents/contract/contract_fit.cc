#include "agents/contract/contract_fit.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

// FNV-1a, 32 bits: a short, stable name for a cut text (the same every night and on every
// host, unlike std::hash).
uint32_t Fnv1a(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

// The longest prefix of `text` of at most `bytes` bytes that ends at a character boundary
// (text is valid UTF-8 here: EscapedText made it so).
std::string_view PrefixAtBoundary(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t cut = bytes;
  // Step back over continuation bytes (10xxxxxx) so the cut never splits a character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.substr(0, cut);
}

}  // namespace

FittedText FitText(std::string_view text, std::size_t max_bytes) {
  FittedText fitted;
  // Escaping never shortens a text, so only its first max_bytes + 1 bytes (to the end of the
  // character there) can be sent: a 100 MB name is not copied whole (issue 23).
  fitted.escaped = !wire::IsPrintableText(text);
  std::size_t end = std::min(text.size(), max_bytes + 1);
  while (end < text.size() && end < max_bytes + 5 &&
         (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) {
    ++end;
  }
  const std::string_view head = text.substr(0, end);
  fitted.text = fitted.escaped ? wire::EscapedText(head) : std::string(head);
  if (fitted.text.size() <= max_bytes) return fitted;
  fitted.cut = true;
  char marker[64];
  std::snprintf(marker, sizeof marker, "\u2026[cut from %zu bytes, #%08x]", text.size(),
                static_cast<unsigned>(Fnv1a(text)));
  const std::string_view tail = marker;
  if (tail.size() >= max_bytes) {  // no room for a marker: a plain cut
    fitted.text = std::string(PrefixAtBoundary(fitted.text, max_bytes));
    return fitted;
  }
  fitted.text =
      std::string(PrefixAtBoundary(fitted.text, max_bytes - tail.size())) + std::string(tail);
  return fitted;
}

StepBuckets::StepBuckets(std::size_t windows, std::size_t max_buckets)
    : windows_(windows),
      k_(max_buckets == 0 || windows <= max_buckets ? 1
                                                    : (windows + max_buckets - 1) / max_buckets),
      count_((windows + k_ - 1) / k_) {}

std::size_t StepBuckets::Size(std::size_t bucket) const {
  return std::min(k_, windows_ - First(bucket));
}

StepNumbers FitStepNumbers(const std::vector<uint32_t>& numbers) {
  StepNumbers fitted{numbers, ""};
  std::set<uint32_t> seen;
  for (uint32_t n : numbers) {
    if (n > wire::kMaxStepNumber) {
      fitted.renumbered_because =
          "step number " + std::to_string(n) + " is past " + std::to_string(wire::kMaxStepNumber);
      break;
    }
    if (!seen.insert(n).second) {
      fitted.renumbered_because = "step number " + std::to_string(n) + " appears twice";
      break;
    }
  }
  if (fitted.renumbered_because.empty()) return fitted;
  for (std::size_t i = 0; i < fitted.numbers.size(); ++i) {
    fitted.numbers[i] = static_cast<uint32_t>(i);
  }
  return fitted;
}

}  // namespace devtime::agent
