#include "agents/trace/neuron/neuron_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "agents/trace/io/file_reader.h"
#include "agents/trace/io/json_util.h"
#include "agents/trace/io/quote.h"
#include "agents/trace/io/timestamp.h"

namespace devtime::trace {
namespace {

namespace od = simdjson::ondemand;
using json::ErrorText;
using json::TrimToken;

constexpr std::string_view kExec = "nc_exec_running";
constexpr std::string_view kSync = "timestamp_sync_point";

}  // namespace

namespace {

absl::Status Bad(const std::string& origin, const std::string& what) {
  return absl::InvalidArgumentError(origin + ": " + what);
}

// json::ForEachField's on_error for the fields of `where` ("system trace event 12.data").
auto FieldError(const std::string& origin, std::string where) {
  return [&origin, where = std::move(where)](simdjson::error_code e) {
    return Bad(origin, where + ": " + ErrorText(e));
  };
}

std::optional<int64_t> ParseIntText(std::string_view s) {
  bool neg = false;
  if (!s.empty() && s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;  // 19 digits fit in uint64
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;  // huge: absent
  return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

// An integer written as a JSON number or as a string of digits ("lnc_idx": "0"); anything else
// (floats, huge integers, other types) reads as absent.
std::optional<int64_t> ReadInt(od::value& v) {
  od::json_type type;
  if (v.type().get(type)) return std::nullopt;
  if (type == od::json_type::number) {
    int64_t i = 0;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
    return std::nullopt;
  }
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    return ParseIntText(s);
  }
  return std::nullopt;
}

// Ids that may be strings or numbers ("process_id": "1627711"): kept as text.
std::string ReadIdText(od::value& v) {
  od::json_type type;
  if (v.type().get(type)) return "";
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return "";
    return std::string(s);
  }
  if (type == od::json_type::number) return std::string(TrimToken(v.raw_json_token()));
  return "";
}

std::string ReadString(od::value& v) {
  std::string_view s;
  if (v.get_string().get(s)) return "";
  return std::string(s);
}

// A field of an event object and where its value goes, read as Text (a JSON string, else ""),
// IdText (ReadIdText), Int (ReadInt) or Id (ReadInt, -1 when absent).
struct Text {
  std::string* to;
};
struct IdText {
  std::string* to;
};
struct Int {
  std::optional<int64_t>* to;
};
struct Id {
  int64_t* to;
};
struct Field {
  std::string_view key;
  std::variant<Text, IdText, Int, Id> to;
};

struct FieldReader {
  od::value& v;
  void operator()(Text t) const { *t.to = ReadString(v); }
  void operator()(IdText t) const { *t.to = ReadIdText(v); }
  void operator()(Int t) const { *t.to = ReadInt(v); }
  void operator()(Id t) const { *t.to = ReadInt(v).value_or(-1); }
};

// Reads `v` into the target of the field named `key`; a key no field names is ignored.
void ReadField(std::span<const Field> fields, std::string_view key, od::value& v) {
  for (const Field& field : fields) {
    if (field.key == key) return std::visit(FieldReader{v}, field.to);
  }
}

// Reads the fields of the event object `obj` into `fields`, and those of its nested object
// `nested` ("data", "args"; skipped when not an object) with on_nested(key, value). Malformed
// JSON is an error that names `where`.
template <typename OnNested>
absl::Status ReadEventFields(od::object& obj, std::span<const Field> fields,
                             std::string_view nested, OnNested&& on_nested,
                             const std::string& origin, const std::string& where) {
  return json::ForEachField(
      obj,
      [&](std::string_view key, od::value& v) -> absl::Status {
        if (key != nested) {
          ReadField(fields, key, v);
          return absl::OkStatus();
        }
        od::object inner;
        if (v.get_object().get(inner)) return absl::OkStatus();  // not an object: no payload
        return json::ForEachField(
            inner,
            [&](std::string_view k, od::value& iv) {
              on_nested(k, iv);
              return absl::OkStatus();
            },
            FieldError(origin, where + "." + std::string(nested)));
      },
      FieldError(origin, where));
}

absl::Status ReadWarnings(od::value& v, const std::string& origin, NeuronSystemTrace* out) {
  od::array arr;
  if (auto e = v.get_array().get(arr)) {
    return Bad(origin, "'warnings' is not an array (" + ErrorText(e) + ")");
  }
  for (auto item : arr) {
    od::value w;
    if (auto e = item.get(w)) return Bad(origin, "malformed 'warnings' (" + ErrorText(e) + ")");
    od::json_type type;
    if (auto e = w.type().get(type))
      return Bad(origin, "malformed 'warnings' (" + ErrorText(e) + ")");
    if (type != od::json_type::string) continue;  // only text warnings are documented
    std::string text = ReadString(w);
    if (auto n = DroppedEventsInWarning(text)) out->events_dropped += *n;
    out->runtime_warnings.push_back(std::move(text));
  }
  return absl::OkStatus();
}

// ---- (a) runtime fetch-API form --------------------------------------------------------

struct FetchEvent {
  std::string type;
  std::string phase;
  int64_t tracking_id = -1;
  int64_t nc_idx = -1;
  int64_t core = -1;  // data.device_core_idx
  int64_t exec_id = -1;
  int64_t sequence_id = -1;       // data.nrt_sequence_id
  std::optional<int64_t> nc_ts;   // data.nc_timestamp_ns (device clock)
  std::optional<int64_t> cpu_ts;  // data.cpu_timestamp_ns (host clock)
};

absl::Status ReadFetchEvent(od::value& element, uint64_t index, const std::string& origin,
                            FetchEvent* ev) {
  const std::string where = "system trace event " + std::to_string(index);
  od::object obj;
  if (auto e = element.get_object().get(obj)) {
    return Bad(origin, where + ": not a JSON object (" + ErrorText(e) + ")");
  }
  const Field fields[] = {{"event_type", Text{&ev->type}},
                          {"phase", Text{&ev->phase}},
                          {"tracking_id", Id{&ev->tracking_id}},
                          {"nc_idx", Id{&ev->nc_idx}}};
  const Field data_fields[] = {{"nc_timestamp_ns", Int{&ev->nc_ts}},
                               {"cpu_timestamp_ns", Int{&ev->cpu_ts}},
                               {"exec_id", Id{&ev->exec_id}},
                               {"nrt_sequence_id", Id{&ev->sequence_id}},
                               {"device_core_idx", Id{&ev->core}}};
  absl::Status st = ReadEventFields(
      obj, fields, "data",
      [&](std::string_view key, od::value& v) { ReadField(data_fields, key, v); }, origin, where);
  if (!st.ok()) return st;
  if (ev->type.empty()) return Bad(origin, where + ": missing field 'event_type'");
  return absl::OkStatus();
}

absl::Status ReadFetchEvents(od::array& events, const std::string& origin, NeuronSystemTrace* out) {
  using PairKey = std::tuple<std::string, int64_t, int64_t, int64_t>;
  std::map<PairKey, FetchEvent> open;
  struct Exec {
    int64_t nc_idx, exec_id, sequence_id;
    uint64_t index;
    int64_t start, stop;  // device clock
  };
  std::vector<Exec> execs;
  struct Sync {
    int64_t exec_id, cpu, nc;
  };
  std::map<int64_t, std::vector<Sync>> syncs;  // by nc_idx
  uint64_t index = 0;
  for (auto element_result : events) {
    od::value element;
    if (auto e = element_result.get(element)) {
      return Bad(origin, "system trace event " + std::to_string(index) + ": malformed JSON (" +
                             ErrorText(e) + ")");
    }
    FetchEvent ev;
    absl::Status st = ReadFetchEvent(element, index, origin, &ev);
    if (!st.ok()) return st;
    const uint64_t this_index = index++;
    if (ev.type == kSync) {
      if (ev.cpu_ts && ev.nc_ts) syncs[ev.nc_idx].push_back({ev.exec_id, *ev.cpu_ts, *ev.nc_ts});
      continue;
    }
    if (ev.phase != "start" && ev.phase != "stop") continue;  // instant events: no duration
    PairKey key{ev.type, ev.tracking_id, ev.nc_idx, ev.core};
    if (ev.phase == "start") {
      if (!open.emplace(key, ev).second) ++out->unpaired;  // restarted without a stop
      continue;
    }
    auto it = open.find(key);
    if (it == open.end()) {
      ++out->unpaired;
      continue;
    }
    const FetchEvent start = std::move(it->second);
    open.erase(it);
    const bool exec = ev.type == kExec;
    // Software events are timed on the host clock when both phases carry it.
    const bool host = !exec && start.cpu_ts && ev.cpu_ts;
    const std::optional<int64_t> t0 = host ? start.cpu_ts : start.nc_ts;
    const std::optional<int64_t> t1 = host ? ev.cpu_ts : ev.nc_ts;
    if (!t0 || !t1) continue;  // no usable timestamp
    if (*t1 < *t0 && !out->invalid_reason) {
      out->invalid_reason = absl::StrFormat(
          "Neuron system trace timestamps go backwards: %s tracking_id %d stops before it starts "
          "(event %d)",
          Quote(ev.type), ev.tracking_id, this_index);
    }
    // Intervals start at >= 0 ns, so that consumers may take end - start of any of them.
    if (*t0 < 0 || *t1 < 0) {
      return Bad(origin, "system trace event " + std::to_string(this_index) +
                             ": negative timestamp (before 0 ns)");
    }
    if (exec) {
      execs.push_back({ev.nc_idx, start.exec_id >= 0 ? start.exec_id : ev.exec_id,
                       start.sequence_id >= 0 ? start.sequence_id : ev.sequence_id, this_index, *t0,
                       std::max(*t0, *t1)});
    } else if (!IsNeuronHardwareEvent(ev.type)) {
      out->runtime.push_back({*t0, std::max(*t0, *t1)});
    }
  }
  out->event_count = index;
  out->unpaired += open.size();
  // Move device times to the host clock with the timestamp_sync_point of the same execution
  // on that core, else the latest one before the event, else the first (§2.4).
  bool aligned = !execs.empty();
  for (const Exec& x : execs) {
    if (!syncs.contains(x.nc_idx)) aligned = false;
  }
  std::vector<std::pair<std::tuple<int64_t, int64_t, uint64_t>, NeuronExecution>> rows;
  rows.reserve(execs.size());
  for (const Exec& x : execs) {
    std::optional<int64_t> shift = 0;
    if (aligned) {
      const std::vector<Sync>& s = syncs[x.nc_idx];
      const Sync* best = nullptr;
      for (const Sync& c : s) {
        if (x.exec_id >= 0 && c.exec_id == x.exec_id) {
          best = &c;
          break;
        }
        if (c.nc <= x.start && (!best || c.nc > best->nc)) best = &c;
      }
      if (!best) best = &s.front();
      shift = CheckedSub(best->cpu, best->nc);
    }
    const std::optional<int64_t> start = shift ? CheckedAdd(x.start, *shift) : std::nullopt;
    const std::optional<int64_t> stop = shift ? CheckedAdd(x.stop, *shift) : std::nullopt;
    if (!start || !stop || *start < 0) {
      return Bad(origin, "system trace event " + std::to_string(x.index) +
                             ": moving nc_timestamp_ns to the host clock (timestamp_sync_point "
                             "cpu - nc) gives a time outside [0, int64 max] ns");
    }
    // Rows without an exec_id cannot be merged: each is its own execution.
    const uint64_t unique = x.exec_id >= 0 ? 0 : x.index + 1;
    rows.push_back({{x.nc_idx, x.exec_id, unique},
                    {{*start, *stop}, std::to_string(x.nc_idx), x.exec_id, x.sequence_id}});
  }
  MergeExecutionsByKey(rows, out);
  out->device_on_host_clock = aligned;
  return absl::OkStatus();
}

// ---- (b) neuron-explorer / neuron-profile view JSON ------------------------------------

absl::Status ReadExplorerEvents(od::array& events, const std::string& origin,
                                NeuronSystemTrace* out) {
  std::vector<std::pair<std::tuple<std::string, std::string, int64_t, uint64_t>, NeuronExecution>>
      exec_rows;
  uint64_t index = 0;
  for (auto element_result : events) {
    const std::string where = "system trace event " + std::to_string(index);
    od::value element;
    if (auto e = element_result.get(element)) {
      return Bad(origin, where + ": malformed JSON (" + ErrorText(e) + ")");
    }
    od::object obj;
    if (auto e = element.get_object().get(obj)) {
      return Bad(origin, where + ": not a JSON object (" + ErrorText(e) + ")");
    }
    std::string name, group, process, lnc, unit, model_name, model_id, device_profile;
    std::optional<int64_t> ts, dur, type;
    int64_t exec_id = -1;
    int64_t sequence_id = -1;
    const Field fields[] = {{"name", Text{&name}},
                            {"timestamp", Int{&ts}},
                            {"duration", Int{&dur}},
                            {"timestamp_unit", Text{&unit}},
                            {"group", Text{&group}},
                            {"type", Int{&type}},
                            {"process_id", IdText{&process}},
                            {"lnc_idx", IdText{&lnc}},
                            {"exec_id", Id{&exec_id}},
                            {"nrt_sequence_id", Id{&sequence_id}},
                            {"model_name", Text{&model_name}},
                            {"model_id", IdText{&model_id}},
                            {"device_profile", Text{&device_profile}}};
    // args.exec_id, args.nrt_sequence_id, args.model_name, args.model_id and args.device_profile
    // count where the top level has none.
    absl::Status st = ReadEventFields(
        obj, fields, "args",
        [&](std::string_view key, od::value& v) {
          if (key == "exec_id" && exec_id < 0) exec_id = ReadInt(v).value_or(-1);
          if (key == "nrt_sequence_id" && sequence_id < 0) sequence_id = ReadInt(v).value_or(-1);
          if (key == "model_name" && model_name.empty()) model_name = ReadString(v);
          if (key == "model_id" && model_id.empty()) model_id = ReadIdText(v);
          if (key == "device_profile" && device_profile.empty()) device_profile = ReadString(v);
        },
        origin, where);
    if (!st.ok()) return st;
    const uint64_t this_index = index++;
    // mem_usage / cpu_util samples have no name; instant events no duration.
    if (name.empty() || !ts || !dur) continue;
    if (!unit.empty() && unit != "ns") {
      return Bad(origin,
                 where + ": unsupported timestamp_unit '" + Quote(unit) + "' (expected ns)");
    }
    if (*dur < 0) {
      if (!out->invalid_reason) {
        out->invalid_reason = absl::StrFormat(
            "negative duration at Neuron system trace event %d (%s)", this_index, Quote(name));
      }
      continue;
    }
    const std::optional<int64_t> end = CheckedAdd(*ts, *dur);
    if (*ts < 0) return Bad(origin, where + ": negative 'timestamp' (before 0 ns)");
    if (!end) {
      return Bad(origin, where + ": fields 'timestamp' + 'duration' overflow int64 nanoseconds (" +
                             std::to_string(*ts) + " + " + std::to_string(*dur) + ")");
    }
    const NsInterval iv{*ts, *end};
    if (IsExecutionName(name)) {
      const uint64_t unique = exec_id >= 0 ? 0 : this_index + 1;
      NeuronExecution x{iv, process + "/" + lnc, exec_id, sequence_id};
      SetModelIdentity(name, model_name, model_id, device_profile, &x);
      exec_rows.push_back({{process, lnc, exec_id, unique}, std::move(x)});
    } else if (type == 99999 || group.starts_with("framework")) {
      out->framework.push_back(iv);
    } else if (!IsNeuronHardwareEvent(name)) {
      out->runtime.push_back(iv);
    }
  }
  out->event_count = index;
  MergeExecutionsByKey(exec_rows, out);
  out->device_on_host_clock = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NeuronSystemTrace> ParseNeuronSystemTrace(const std::string& padded, size_t size,
                                                         const std::string& origin) {
  od::parser parser;
  od::document doc;
  if (absl::Status st =
          json::Iterate(parser, padded, size, origin, "empty file (0 bytes of JSON)", &doc);
      !st.ok()) {
    return st;
  }
  od::object top;
  if (auto e = doc.get_object().get(top)) {
    return Bad(origin, "a Neuron system trace is a JSON object (" + ErrorText(e) + ")");
  }
  NeuronSystemTrace out;
  bool saw_events = false;
  absl::Status st = json::ForEachField(
      top,
      [&](std::string_view key, od::value& v) -> absl::Status {
        if (key == "events" || key == "trace_event" || key == "trace_events") {
          if (saw_events) return Bad(origin, "more than one event array ('" + Quote(key) + "')");
          od::array arr;
          if (auto e = v.get_array().get(arr)) {
            return Bad(origin, "'" + Quote(key) + "' is not an array (" + ErrorText(e) + ")");
          }
          saw_events = true;
          out.form = key == "events" ? "fetch-api" : "explorer-json";
          absl::Status read = key == "events" ? ReadFetchEvents(arr, origin, &out)
                                              : ReadExplorerEvents(arr, origin, &out);
          if (!read.ok()) return read;
        } else if (key == "warnings") {
          return ReadWarnings(v, origin, &out);
        } else if (key == "events_dropped") {
          const std::optional<int64_t> n = ReadInt(v);
          if (!n || *n < 0) return Bad(origin, "'events_dropped' is not a non-negative integer");
          out.events_dropped += static_cast<uint64_t>(*n);
        }
        return absl::OkStatus();
      },
      [&](simdjson::error_code e) {
        return Bad(origin, "malformed JSON at top level (" + ErrorText(e) + ")");
      });
  if (!st.ok()) return st;
  if (!json::AtEnd(doc)) return Bad(origin, "trailing content after the JSON document");
  if (!saw_events) {
    return Bad(origin,
               "not a Neuron system trace: no 'events', 'trace_event' or 'trace_events' array");
  }
  return out;
}

absl::StatusOr<NeuronSystemTrace> ReadNeuronSystemTrace(const std::filesystem::path& path) {
  absl::StatusOr<FileContent> content = ReadFileContent(path, simdjson::SIMDJSON_PADDING);
  if (!content.ok()) return content.status();
  return ParseNeuronSystemTrace(content->buffer, content->size, path.string());
}

}  // namespace devtime::trace
