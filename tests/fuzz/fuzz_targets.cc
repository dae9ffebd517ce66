#include "tests/fuzz/fuzz_targets.h"

#include <simdjson.h>

#include <string>

#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/kineto/key_averages_reader.h"
#include "agents/trace/neuron/neuron_reader.h"
#include "agents/trace/perfetto/pftrace_reader.h"
#include "agents/trace/summary/summarizer.h"
#include "agents/trace/trace_summary.h"

namespace devtime::trace::fuzz {
namespace {

std::string Padded(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  s.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  return s;
}

}  // namespace

int KinetoJson(const uint8_t* data, size_t size) {
  static const SummarizeOptions options;
  absl::StatusOr<RawTrace> raw = ParseTraceJson(reinterpret_cast<const char*>(data), size, "fuzz");
  if (raw.ok()) {
    TraceSummary s = SummarizeRawTrace(*raw, options);
    (void)RenderTable(s);
    (void)RenderComparison(s, s);
    (void)StepWindows(*raw, options);
  }
  // The filtered path Summarize() uses.
  std::set<std::string> keep = options.host_op_categories;
  keep.insert(options.device_categories.begin(), options.device_categories.end());
  TraceReadOptions read;
  read.keep_categories = &keep;
  read.host_categories = &options.host_op_categories;
  (void)ParseTraceJson(reinterpret_cast<const char*>(data), size, "fuzz", read);
  return 0;
}

int NeuronSystemTrace(const uint8_t* data, size_t size) {
  (void)ParseNeuronSystemTrace(Padded(data, size), size, "fuzz");
  return 0;
}

int PerfettoSystemTrace(const uint8_t* data, size_t size) {
  (void)ParsePerfettoSystemTrace(std::string_view(reinterpret_cast<const char*>(data), size),
                                 "fuzz");
  return 0;
}

int KeyAverages(const uint8_t* data, size_t size) {
  (void)ParseKeyAverages(Padded(data, size), size, "fuzz");
  return 0;
}

int Environment(const uint8_t* data, size_t size) {
  (void)ParseEnvironment(Padded(data, size), size, "fuzz");
  return 0;
}

}  // namespace devtime::trace::fuzz
