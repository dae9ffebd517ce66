// Small helpers shared by the simdjson On-Demand readers of this library (internal).
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace devtime::trace::json {

inline std::string ErrorText(simdjson::error_code e) { return simdjson::error_message(e); }

// raw_json_token() may carry the whitespace that follows the token.
inline std::string_view TrimToken(std::string_view t) {
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t')) {
    t.remove_suffix(1);
  }
  return t;
}

// True when the whole document has been consumed (simdjson 3.0.1 has no document::at_end()).
inline bool AtEnd(simdjson::ondemand::document& doc) {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

}  // namespace devtime::trace::json
