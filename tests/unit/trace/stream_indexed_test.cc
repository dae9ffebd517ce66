// The indexed event path (json_trace_reader.cc ReadIndexedEvent: IndexObject's structural index,
// then a walk of it; on with DEVTIME_TRACE_INDEX=1) against the byte-by-byte path on the same
// inputs: every event, id, count and error must be the same. The inputs are the variants the
// walk must either read alike or hand back: whitespace, literals, nested values, duplicate keys,
// escapes, wrong types, syntax errors, dropped categories, args read partly.
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "agents/trace/kineto/json_trace_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// The outcome of a parse as text: the error, or every field of every kept event.
std::string Outcome(const std::string& text, const TraceReadOptions& options) {
  absl::StatusOr<RawTrace> t = ParseTraceJson(text.data(), text.size(), "in", options);
  if (!t.ok()) return "error: " + std::string(t.status().message());
  std::string out = t->format + " total=" + std::to_string(t->total_events) +
                    " complete=" + std::to_string(t->complete_events) + "\n";
  for (const RawEvent& e : t->events) {
    out += std::to_string(e.index) + " " + std::string(t->strings.Get(e.name)) + "|" +
           std::string(t->strings.Get(e.cat)) + "|" + std::string(t->strings.Get(e.pid)) + "|" +
           std::string(t->strings.Get(e.tid)) + " " + std::to_string(e.ts_ns) + " " +
           std::to_string(e.dur_ns) + " " + std::to_string(e.correlation) + " " +
           std::to_string(e.external_id) + "\n";
  }
  for (const LaunchIds& l : t->launch_ids) {
    out += "launch " + std::to_string(l.event) + " " + std::to_string(l.exec_id) + " " +
           std::to_string(l.sequence_id) + "\n";
  }
  return out;
}

struct Both {
  std::string indexed, bytewise;
};

Both Parse(const std::string& text, const TraceReadOptions& options = {}) {
  Both b;
  setenv("DEVTIME_TRACE_INDEX", "1", 1);
  b.indexed = Outcome(text, options);
  unsetenv("DEVTIME_TRACE_INDEX");
  b.bytewise = Outcome(text, options);
  return b;
}

// One event per variant, padded so that it crosses 64-byte blocks at every offset.
const std::vector<std::string>& Variants() {
  static const std::vector<std::string> v = {
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1, "tid": 2, "ts": 10.5, "dur": 2, "args": {"External id": 7, "Ev Idx": 7}})",
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":11,"dur":3,"args":{"External id":7,"correlation":99,"grid":[1,1,1]}})",
      "{\n\t\"ph\" :\r\n \"X\" , \"name\" : \"ws\" , \"ts\" : 12 , \"dur\" : 1 , \"pid\" : \"p\" , "
      "\"tid\" : \"t\" }",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 13, "dur": 1, "args": {"correlation": "99", "External id": 7, "exec_id": 5, "nrt_sequence_id": 6}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "lit", "pid": 1, "tid": 2, "ts": 14, "dur": 1, "x": true, "y": false, "z": null, "args": {"External id": null}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "bad literal", "pid": 1, "tid": 2, "ts": 14, "dur": 1, "x": tru})",
      R"({"ph": "X", "cat": "cpu_op", "name": "dup", "name": "dup2", "pid": 1, "tid": 2, "ts": 15, "dur": 1, "ts": 16})",
      R"({"ph": "X", "cat": "cpu_op", "name": "esc\"aped\u00e9", "pid": 1, "tid": 2, "ts": 17, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": 5, "pid": 1, "tid": 2, "ts": 18, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ts string", "pid": 1, "tid": 2, "ts": "18", "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "pid obj", "pid": {}, "tid": 2, "ts": 18, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 2, "ts": 18})",
      R"({"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 2, "ts": 18, "dur": -1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "trailing comma", "pid": 1, "tid": 2, "ts": 18, "dur": 1,})",
      R"({"ph": "X", "cat": "cpu_op", "name": "colon" "pid": 1, "tid": 2, "ts": 18, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "num junk", "pid": 1, "tid": 2, "ts": 18x, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "num space", "pid": 1, "tid": 2, "ts": 1 8, "dur": 1})",
      R"({"ph": "X", "cat": "python_function", "name": "dropped", "pid": 1, "tid": 2, "ts": 19, "dur": 1, "rest": [}, "not": json]})",
      R"({"cat": "python_function", "ph": "X", "junk": [1, {"a": "]"}], "name": "dropped2", "ts": 19, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args rest", "pid": 1, "tid": 2, "ts": 20, "dur": 1, "args": {"External id": 8, "skipped": [}, "rest": ]}})",
      R"({"ph": "X", "cat": "kernel", "name": "args ids", "pid": 1, "tid": 2, "ts": 20, "dur": 1, "args": {"correlation": 1.5, "External id": 99999999999999999999, "x": {"correlation": 3}}})",
      R"({"ph": "X", "name": "no cat", "pid": 1, "tid": 2, "ts": 21, "dur": 1, "args": {"exec_id": "12", "External id": -4}})",
      R"({"ph": "X", "name": "args first", "args": {"External id": 3, "correlation": 4}, "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 21, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args array", "pid": 1, "tid": 2, "ts": 21, "dur": 1, "args": [1, 2]})",
      R"({"ph": "s", "id": 5, "pid": 1, "tid": 2, "ts": 22, "cat": "ac2g", "name": "ac2g"})",
      R"({"ph": "f", "id": 5, "pid": 1, "tid": 2, "ts": 23, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})",
      R"({"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 1, "tid": 2, "ts": 24, "dur": 1, "x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})",
      R"({"ph": "X", "cat": "cpu_op", "name": "bracket mix", "pid": 1, "tid": 2, "ts": 24, "dur": 1, "x": [1, 2}, "y": 1})",
      R"({})",
      R"({"ph": "X"})",
      R"({ })",
      R"({"ph": "X", "cat": "cpu_op", "name": "", "pid": "", "tid": "", "ts": 0, "dur": 0})",
      R"({"ph": "X", "cat": "cpu_op", "name": "utf8 \xff", "pid": 1, "tid": 2, "ts": 25, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_\xff", "name": "bad cat", "pid": 1, "tid": 2, "ts": 25, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ts huge", "pid": 1, "tid": 2, "ts": 99999999999999999999, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ts exp", "pid": 1, "tid": 2, "ts": 1e3, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "obj after", "pid": 1, "tid": 2, "ts": 26, "dur": 1} x)",
      R"({"ph": "X", "cat": "cpu_op", "name": "key not string", "pid": 1, tid: 2, "ts": 26, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "two colons", "pid":: 1, "tid": 2, "ts": 26, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "str then junk", "pid": "1" 2, "tid": 2, "ts": 26, "dur": 1})",
  };
  return v;
}

TEST(TraceStreamIndexed, EachVariantAloneReadsAlike) {
  const std::set<std::string> host = {"cpu_op", "user_annotation"};
  const std::set<std::string> keep = {"cpu_op", "kernel", "cuda_runtime", "user_annotation"};
  for (const std::string& ev : Variants()) {
    for (int pad = 0; pad < 70; pad += 3) {
      const std::string text = R"({"traceEvents": [)" + std::string(static_cast<size_t>(pad), ' ') +
                               ev + ", " + Variants()[0] + "]}";
      for (int opt = 0; opt < 2; ++opt) {
        TraceReadOptions options;
        if (opt == 1) {
          options.host_categories = &host;
          options.keep_categories = &keep;
        }
        const Both b = Parse(text, options);
        ASSERT_EQ(b.indexed, b.bytewise) << "event: " << ev << "\npad " << pad << " opt " << opt;
      }
    }
  }
}

TEST(TraceStreamIndexed, AllVariantsTogetherReadAlike) {
  std::string text = R"({"traceEvents": [)";
  bool first = true;
  for (const std::string& ev : Variants()) {
    // Only the ones the byte-by-byte path accepts, so that the whole trace parses.
    const std::string alone = R"({"traceEvents": [)" + ev + "]}";
    if (Outcome(alone, {}).starts_with("error")) continue;
    for (int rep = 0; rep < 5; ++rep) {
      if (!first) text += ",\n  ";
      first = false;
      text += ev;
    }
  }
  text += "]}";
  const Both b = Parse(text);
  EXPECT_FALSE(b.indexed.starts_with("error")) << b.indexed;
  EXPECT_EQ(b.indexed, b.bytewise);
  // And through gzip chunks and a legacy array.
  const Both g = Parse(Gzip(text));
  EXPECT_EQ(g.indexed, b.indexed);
  EXPECT_EQ(g.bytewise, b.bytewise);
  const std::string legacy =
      text.substr(std::string(R"({"traceEvents": )").size(),
                  text.size() - std::string(R"({"traceEvents": )").size() - 1);
  const Both l = Parse(legacy);
  EXPECT_EQ(l.indexed, l.bytewise);
}

TEST(TraceStreamIndexed, FixturesReadAlike) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Fixture(""))) {
    if (entry.path().extension() != ".json") continue;
    const std::string text = ReadAll(entry.path());
    const Both b = Parse(text);
    EXPECT_EQ(b.indexed, b.bytewise) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 5);
}

}  // namespace
}  // namespace devtime::trace::testing
