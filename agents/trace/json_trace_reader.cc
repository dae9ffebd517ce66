#include "agents/trace/json_trace_reader.h"

#include <simdjson.h>

#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"
#include "agents/trace/file_reader.h"
#include "agents/trace/json_util.h"
#include "agents/trace/timestamp.h"

namespace devtime::trace {
namespace {

namespace od = simdjson::ondemand;

using json::ErrorText;
using json::TrimToken;

absl::Status Bad(const std::string& origin, const std::string& what) {
  return absl::InvalidArgumentError(origin + ": " + what);
}

absl::Status BadEvent(const std::string& origin, uint64_t index, const std::string& what) {
  return absl::InvalidArgumentError(origin + ": event " + std::to_string(index) + ": " + what);
}

// pid/tid may be an integer or a string; both become text.
simdjson::error_code ReadIdText(od::value& v, std::string* out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    out->assign(s);
    return simdjson::SUCCESS;
  }
  if (type == od::json_type::number) {
    out->assign(TrimToken(v.raw_json_token()));
    return simdjson::SUCCESS;
  }
  return simdjson::INCORRECT_TYPE;
}

// args.correlation / args["External id"]: integers, sometimes strings (AMD traces). Anything
// else (null, float, out of range) reads as absent.
int64_t ReadOptionalId(od::value& v) {
  int64_t id = -1;
  if (v.get_int64().get(id) == simdjson::SUCCESS) return id;
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) {
    char* end = nullptr;
    std::string tmp(s);
    const long long parsed = std::strtoll(tmp.c_str(), &end, 10);
    if (end != tmp.c_str() && *end == '\0') return parsed;
  }
  return -1;
}

simdjson::error_code ReadArgs(od::value& v, RawEvent* ev) {
  od::object args;
  if (auto e = v.get_object().get(args)) return e;
  for (auto field_result : args) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    if (key == "correlation") {
      ev->correlation = ReadOptionalId(field.value());
    } else if (key == "External id") {
      ev->external_id = ReadOptionalId(field.value());
    }
  }
  return simdjson::SUCCESS;
}

// Parses one event object. Returns OK and sets *keep when it is a complete ("X") event.
absl::Status ReadEvent(od::value& element, uint64_t index, const std::string& origin,
                       RawTrace* trace, RawEvent* ev, bool* keep) {
  *keep = false;
  od::object obj;
  if (auto e = element.get_object().get(obj)) {
    return BadEvent(origin, index, "not a JSON object (" + ErrorText(e) + ")");
  }
  bool has_name = false;
  std::string_view ts_token;
  std::string_view dur_token;
  char ph = 0;
  std::string text;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return BadEvent(origin, index, ErrorText(e));
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return BadEvent(origin, index, ErrorText(e));
    od::value value = field.value();
    if (key == "ph") {
      std::string_view s;
      if (auto e = value.get_string().get(s)) {
        return BadEvent(origin, index, "field 'ph': " + ErrorText(e));
      }
      ph = s.size() == 1 ? s[0] : '?';
    } else if (key == "name") {
      std::string_view s;
      if (auto e = value.get_string().get(s)) {
        return BadEvent(origin, index, "field 'name': " + ErrorText(e));
      }
      // The string_view lives in the parser's string buffer until the next document.
      ev->name = trace->strings.Intern(s);
      has_name = true;
    } else if (key == "cat") {
      std::string_view s;
      if (auto e = value.get_string().get(s)) {
        return BadEvent(origin, index, "field 'cat': " + ErrorText(e));
      }
      ev->cat = trace->strings.Intern(s);
    } else if (key == "ts" || key == "dur") {
      const std::string_view raw = TrimToken(value.raw_json_token());
      if (raw.empty() || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))) {
        return BadEvent(origin, index, "field '" + std::string(key) + "' is not a number");
      }
      (key == "ts" ? ts_token : dur_token) = raw;
    } else if (key == "pid" || key == "tid") {
      if (auto e = ReadIdText(value, &text)) {
        return BadEvent(origin, index, "field '" + std::string(key) + "': " + ErrorText(e));
      }
      (key == "pid" ? ev->pid : ev->tid) = trace->strings.Intern(text);
    } else if (key == "args") {
      od::json_type type;
      if (auto e = value.type().get(type)) {
        return BadEvent(origin, index, "field 'args': " + ErrorText(e));
      }
      if (type == od::json_type::object) {
        if (auto e = ReadArgs(value, ev)) {
          return BadEvent(origin, index, "field 'args': " + ErrorText(e));
        }
      }
    }
    // Other keys (id, bp, s, ...) are skipped by On-Demand.
  }
  if (ph == 0) return BadEvent(origin, index, "missing field 'ph'");
  if (ph != 'X') return absl::OkStatus();  // M, i, s, f, C, ...: not timed
  if (!has_name) return BadEvent(origin, index, "missing field 'name'");
  if (ts_token.empty()) return BadEvent(origin, index, "missing field 'ts'");
  if (dur_token.empty()) return BadEvent(origin, index, "missing field 'dur'");
  std::optional<int64_t> ts = ParseMicrosToNanos(ts_token);
  if (!ts)
    return BadEvent(origin, index, "field 'ts' is not a valid time: " + std::string(ts_token));
  std::optional<int64_t> dur = ParseMicrosToNanos(dur_token);
  if (!dur) {
    return BadEvent(origin, index, "field 'dur' is not a valid time: " + std::string(dur_token));
  }
  ev->ts_ns = *ts;
  ev->dur_ns = *dur;
  ev->index = index;
  *keep = true;
  return absl::OkStatus();
}

absl::Status ReadEventArray(od::array& events, const std::string& origin, RawTrace* trace) {
  uint64_t index = 0;
  for (auto element_result : events) {
    od::value element;
    if (auto e = element_result.get(element)) {
      return BadEvent(origin, index, "malformed JSON (" + ErrorText(e) + ")");
    }
    RawEvent ev;
    bool keep = false;
    absl::Status st = ReadEvent(element, index, origin, trace, &ev, &keep);
    if (!st.ok()) return st;
    if (keep) trace->events.push_back(ev);
    ++index;
  }
  trace->total_events = index;
  return absl::OkStatus();
}

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

absl::StatusOr<RawTrace> ParseTraceJson(const std::string& padded, size_t size,
                                        const std::string& origin) {
  // Skip leading whitespace to give a precise message for empty input.
  size_t first = 0;
  while (first < size && (padded[first] == ' ' || padded[first] == '\n' || padded[first] == '\r' ||
                          padded[first] == '\t')) {
    ++first;
  }
  if (first == size) return Bad(origin, "empty file (0 bytes of JSON)");
  if (padded.size() < size + simdjson::SIMDJSON_PADDING) {
    return absl::InternalError(origin + ": buffer lacks simdjson padding");
  }
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(padded.data(), size, padded.size()).get(doc)) {
    return Bad(origin, "not JSON (" + ErrorText(e) + ")");
  }
  RawTrace trace;
  od::json_type type;
  if (auto e = doc.type().get(type)) return Bad(origin, "not JSON (" + ErrorText(e) + ")");
  if (type == od::json_type::array) {
    trace.format = "legacy-array";
    od::array events;
    if (auto e = doc.get_array().get(events)) return Bad(origin, "not JSON (" + ErrorText(e) + ")");
    absl::Status st = ReadEventArray(events, origin, &trace);
    if (!st.ok()) return st;
  } else if (type == od::json_type::object) {
    trace.format = "kineto-json";
    od::object top;
    if (auto e = doc.get_object().get(top)) return Bad(origin, "not JSON (" + ErrorText(e) + ")");
    bool saw_events = false;
    for (auto field_result : top) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) {
        return Bad(origin, "malformed JSON at top level (" + ErrorText(e) + ")");
      }
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) {
        return Bad(origin, "malformed JSON at top level (" + ErrorText(e) + ")");
      }
      od::value value = field.value();
      if (key == "traceEvents") {
        od::array events;
        if (auto e = value.get_array().get(events)) {
          return Bad(origin, "'traceEvents' is not an array (" + ErrorText(e) + ")");
        }
        absl::Status st = ReadEventArray(events, origin, &trace);
        if (!st.ok()) return st;
        saw_events = true;
      } else if (key == "baseTimeNanoseconds") {
        int64_t base = 0;
        if (auto e = value.get_int64().get(base)) {
          return Bad(origin, "'baseTimeNanoseconds' is not an integer (" + ErrorText(e) + ")");
        }
        trace.base_time_ns = base;
      } else if (key == "deviceProperties") {
        od::array props;
        if (value.get_array().get(props) == simdjson::SUCCESS) {
          uint64_t n = 0;
          for (auto p : props) {
            od::value pv;
            if (auto e = p.get(pv)) {
              return Bad(origin, "malformed 'deviceProperties' (" + ErrorText(e) + ")");
            }
            ++n;
          }
          trace.device_properties_count = n;
        }
      }
    }
    if (!saw_events) return Bad(origin, "JSON object has no 'traceEvents' array");
  } else {
    return Bad(origin, "top-level JSON value is neither an event array nor an object");
  }
  if (!json::AtEnd(doc)) return Bad(origin, "trailing content after the JSON document");
  return trace;
}

absl::StatusOr<RawTrace> ReadTraceFile(const std::filesystem::path& path) {
  absl::StatusOr<FileContent> content = ReadFileContent(path, simdjson::SIMDJSON_PADDING);
  if (!content.ok()) return content.status();
  return ParseTraceJson(content->buffer, content->size, path.string());
}

}  // namespace devtime::trace
