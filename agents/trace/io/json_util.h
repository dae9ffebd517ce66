// Small helpers shared by the simdjson On-Demand readers of this library (internal): the
// key_averages/environment side files (key_averages_reader.cc) and Neuron system traces
// (neuron_reader.cc).
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

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

// Starts `parser` on the first `size` bytes of `padded` (which must carry SIMDJSON_PADDING zero
// bytes after them). kInvalidArgument "<origin>: <empty_message>" for 0 bytes and
// "<origin>: not JSON (...)" when simdjson refuses the start; kInternal without padding.
inline absl::Status Iterate(simdjson::ondemand::parser& parser, const std::string& padded,
                            size_t size, const std::string& origin, std::string_view empty_message,
                            simdjson::ondemand::document* doc) {
  if (size == 0) return absl::InvalidArgumentError(origin + ": " + std::string(empty_message));
  if (padded.size() < size + simdjson::SIMDJSON_PADDING) {
    return absl::InternalError(origin + ": buffer lacks simdjson padding");
  }
  if (auto e = parser.iterate(padded.data(), size, padded.size()).get(*doc)) {
    return absl::InvalidArgumentError(origin + ": not JSON (" + ErrorText(e) + ")");
  }
  return absl::OkStatus();
}

// Calls on_field(key, value) -> absl::Status for each field of `obj` in order and stops at the
// first non-OK Status, which it returns. A field simdjson cannot read (malformed JSON) returns
// on_error(error_code) -> absl::Status, which says where.
template <typename OnField, typename OnError>
absl::Status ForEachField(simdjson::ondemand::object& obj, OnField&& on_field, OnError&& on_error) {
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    if (auto e = std::move(field_result).get(field)) return on_error(e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return on_error(e);
    simdjson::ondemand::value value = field.value();
    if (absl::Status st = on_field(key, value); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace devtime::trace::json
