// The simdjson On-Demand baseline of trace_bench (issue 23: "simdjson on-demand parses 536 MB/s"
// in the same run): the file read whole into a padded buffer, then every event of traceEvents
// iterated field by field, its ph, name, cat, ts and dur read and the complete events' duration
// summed per name — the least a summary must do, by the strongest general JSON parser packaged.
// Built with -march=haswell (CMakeLists.txt) so that On-Demand compiles to its AVX2 kernel
// (Debian's library build would use `fallback`); a bench only, run where the CPU has AVX2.
// The file is read into huge pages (devtime's own LargeBuffer) and run.sh starts this mode with
// glibc's huge-page malloc tunable: on the VMs measured a 4 KiB page fault costs ~15 us, and a
// baseline that faults its 256 MB in 4 KiB pages measures the VM, not the parser (issue 23,
// fifth pass: 123 MB/s so, where devtime's summary runs from a reused buffer).
#include "tests/bench/trace/ondemand_baseline.h"

#include <simdjson.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "agents/trace/io/byte_source.h"
#include "agents/trace/io/large_array.h"

namespace devtime::trace::bench {

OnDemandResult OnDemandSummarize(const std::string& path) {
  OnDemandResult r;
  absl::StatusOr<std::unique_ptr<stream::MappedFile>> file = stream::MappedFile::Open(path);
  if (!file.ok()) {
    r.error = std::string(file.status().message());
    return r;
  }
  const size_t size = (*file)->size();
  const LargeBuffer json = MakeLargeBuffer(size + simdjson::SIMDJSON_PADDING);
  if ((*file)->ReadAt(0, json.get(), size) != size) {
    r.error = path + ": short read";
    return r;
  }
  std::memset(json.get() + size, 0, simdjson::SIMDJSON_PADDING);
  r.json_bytes = size;
  simdjson::ondemand::parser parser(size + 64);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(json.get(), size, size + simdjson::SIMDJSON_PADDING).get(doc)) {
    r.error = simdjson::error_message(e);
    return r;
  }
  simdjson::ondemand::array events;
  if (auto e = doc["traceEvents"].get_array().get(events)) {
    r.error = simdjson::error_message(e);
    return r;
  }
  std::unordered_map<std::string, double> dur_by_name;
  bool bad = false;  // a field of the wrong type
  for (auto ev : events) {
    simdjson::ondemand::object obj;
    if (ev.get_object().get(obj)) {
      r.error = "event is not an object";
      return r;
    }
    std::string_view ph, name, cat;
    double dur = 0;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) continue;
      if (key == "ph") {
        bad |= field.value().get_string().get(ph) != simdjson::SUCCESS;
      } else if (key == "name") {
        bad |= field.value().get_string().get(name) != simdjson::SUCCESS;
      } else if (key == "cat") {
        bad |= field.value().get_string().get(cat) != simdjson::SUCCESS;
      } else if (key == "ts") {
        double ts = 0;
        bad |= field.value().get_double().get(ts) != simdjson::SUCCESS;
      } else if (key == "dur") {
        bad |= field.value().get_double().get(dur) != simdjson::SUCCESS;
      }
    }
    ++r.events;
    if (ph == "X" && cat != "python_function") dur_by_name[std::string(name)] += dur;
  }
  if (bad) r.error = "a field of the wrong type";
  r.names = dur_by_name.size();
  return r;
}

}  // namespace devtime::trace::bench
