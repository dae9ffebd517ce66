#include "agents/trace/kineto/key_averages_reader.h"

#include <simdjson.h>

#include "absl/status/status.h"
#include "agents/trace/io/file_reader.h"
#include "agents/trace/io/json_util.h"
#include "agents/trace/io/quote.h"

namespace devtime::trace {
namespace {

namespace od = simdjson::ondemand;

absl::Status Bad(const std::filesystem::path& path, const std::string& what) {
  return absl::InvalidArgumentError(path.string() + ": " + what);
}

std::string Err(simdjson::error_code e) { return json::ErrorText(e); }

// The error for a top-level field simdjson cannot read.
auto MalformedAt(const std::filesystem::path& path) {
  return [&path](simdjson::error_code e) { return Bad(path, "malformed JSON (" + Err(e) + ")"); };
}

// Starts `parser` on a side file whose top level must be a JSON object.
absl::Status IterateObject(od::parser& parser, const std::string& padded, size_t size,
                           const std::filesystem::path& path, od::document* doc, od::object* top) {
  if (absl::Status st = json::Iterate(parser, padded, size, path.string(), "empty file", doc);
      !st.ok()) {
    return st;
  }
  if (doc->get_object().get(*top)) return Bad(path, "top level is not an object");
  return absl::OkStatus();
}

// Reads the JSON string `v` (the value of `what`) into *out.
absl::Status ReadText(od::value& v, const std::filesystem::path& path, const std::string& what,
                      std::string* out) {
  std::string_view s;
  if (auto e = v.get_string().get(s)) return Bad(path, what + ": " + Err(e));
  *out = std::string(s);
  return absl::OkStatus();
}

absl::Status ReadRow(const std::filesystem::path& path, size_t index, od::value& element,
                     OpStats* row) {
  const std::string where = "rows[" + std::to_string(index) + "]";
  od::object obj;
  if (element.get_object().get(obj)) return Bad(path, where + " is not an object");
  bool has_name = false;
  bool has_calls = false;
  absl::Status st = json::ForEachField(
      obj,
      [&](std::string_view key, od::value& v) -> absl::Status {
        if (key == "name") {
          has_name = true;
          return ReadText(v, path, where + ".name", &row->name);
        } else if (key == "calls") {
          uint64_t c = 0;
          if (auto e = v.get_uint64().get(c)) return Bad(path, where + ".calls: " + Err(e));
          row->calls = c;
          has_calls = true;
        } else if (key == "self_cpu_us" || key == "cpu_total_us" || key == "self_device_us" ||
                   key == "device_total_us") {
          double d = 0;
          if (auto e = v.get_double().get(d)) {
            return Bad(path, where + "." + Quote(key) + ": " + Err(e));
          }
          if (key == "self_cpu_us") row->self_cpu_us = d;
          if (key == "cpu_total_us") row->total_cpu_us = d;
          if (key == "self_device_us") row->self_device_us = d;
          if (key == "device_total_us") row->total_device_us = d;
        }
        return absl::OkStatus();
      },
      [&](simdjson::error_code e) { return Bad(path, where + ": " + Err(e)); });
  if (!st.ok()) return st;
  if (!has_name) return Bad(path, where + ": missing field 'name'");
  if (!has_calls) return Bad(path, where + ": missing field 'calls'");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KeyAverages> ReadKeyAverages(const std::filesystem::path& path) {
  absl::StatusOr<FileContent> content = ReadFileContent(path, simdjson::SIMDJSON_PADDING);
  if (!content.ok()) return content.status();
  return ParseKeyAverages(content->buffer, content->size, path);
}

absl::StatusOr<KeyAverages> ParseKeyAverages(const std::string& padded, size_t size,
                                             const std::filesystem::path& path) {
  od::parser parser;
  od::document doc;
  od::object top;
  if (absl::Status st = IterateObject(parser, padded, size, path, &doc, &top); !st.ok()) {
    return st;
  }
  KeyAverages out;
  bool has_rows = false;
  absl::Status st = json::ForEachField(
      top,
      [&](std::string_view key, od::value& v) -> absl::Status {
        if (key == "device") {
          return ReadText(v, path, "'device'", &out.device);
        } else if (key == "rows") {
          od::array rows;
          if (v.get_array().get(rows)) return Bad(path, "'rows' is not an array");
          size_t index = 0;
          for (auto element_result : rows) {
            od::value element;
            if (auto e = element_result.get(element)) {
              return Bad(path, "rows[" + std::to_string(index) + "]: " + Err(e));
            }
            OpStats row;
            absl::Status row_status = ReadRow(path, index, element, &row);
            if (!row_status.ok()) return row_status;
            out.rows.push_back(std::move(row));
            ++index;
          }
          has_rows = true;
        }
        return absl::OkStatus();
      },
      MalformedAt(path));
  if (!st.ok()) return st;
  if (!json::AtEnd(doc)) return Bad(path, "trailing content after the JSON document");
  if (!has_rows) return Bad(path, "missing field 'rows'");
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ReadEnvironment(
    const std::filesystem::path& path) {
  absl::StatusOr<FileContent> content = ReadFileContent(path, simdjson::SIMDJSON_PADDING);
  if (!content.ok()) return content.status();
  return ParseEnvironment(content->buffer, content->size, path);
}

absl::StatusOr<std::map<std::string, std::string>> ParseEnvironment(
    const std::string& padded, size_t size, const std::filesystem::path& path) {
  od::parser parser;
  od::document doc;
  od::object top;
  if (absl::Status st = IterateObject(parser, padded, size, path, &doc, &top); !st.ok()) {
    return st;
  }
  std::map<std::string, std::string> env;
  absl::Status st = json::ForEachField(
      top,
      [&](std::string_view key, od::value& v) -> absl::Status {
        std::string k(key);
        od::json_type type;
        if (auto e = v.type().get(type)) return Bad(path, "'" + Quote(k) + "': " + Err(e));
        if (type == od::json_type::string) {
          return ReadText(v, path, "'" + Quote(k) + "'", &env[k]);
        } else if (type == od::json_type::object || type == od::json_type::array) {
          return Bad(path, "'" + Quote(k) + "' is not a string (environment.json must be flat)");
        } else {
          env[k] = std::string(json::TrimToken(v.raw_json_token()));
        }
        return absl::OkStatus();
      },
      MalformedAt(path));
  if (!st.ok()) return st;
  if (!json::AtEnd(doc)) return Bad(path, "trailing content after the JSON document");
  return env;
}

}  // namespace devtime::trace
