// The Kineto-layout event path (json_trace_reader.cc ReadKinetoEvent: keys and separators
// compared with Kineto's literals) against the key-by-key path (ReadEvent's loop) on the same
// inputs: every event, id, count and error must be the same. The key-by-key outcome comes from
// the same text with a space after each event's '{', which the layout path refuses at its first
// compare (the JSON is the same). The inputs are the variants the layout path must either read
// alike or hand back: whitespace, literals, nested values, duplicate keys, escapes, wrong types,
// syntax errors, dropped categories, args read partly, flows skipped after "ph".
// TraceStreamFile: the same variants read from a file in small chunks (FileInput, every unit
// crossing a chunk's end at every offset) against the same text parsed from memory.
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "agents/trace/io/byte_source.h"
#include "agents/trace/kineto/json_trace_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// The outcome of a parse as text: the error, or every field of every kept event.
std::string Outcome(const absl::StatusOr<RawTrace>& t) {
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

std::string Outcome(const std::string& text, const TraceReadOptions& options,
                    const std::string& origin = "in") {
  return Outcome(ParseTraceJson(text.data(), text.size(), origin, options));
}

// `text` with a space after the '{' of every event in Kineto's layout and of every `args`
// object: the same JSON, read key by key (also args' leading "External id", which the layout
// path reads by its literal).
std::string KeyByKey(std::string text) {
  for (const std::string from : {"{\"ph\": ", "\"args\": {\""}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 2)) {
      text.insert(at + from.size() - 1, " ");
    }
  }
  return text;
}

struct Both {
  std::string layout, keyed;
};

Both Parse(const std::string& text, const TraceReadOptions& options = {}) {
  return {Outcome(text, options), Outcome(KeyByKey(text), options)};
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
      R"({"ph": "X", "cat": "cpu_op", "name": "string ids", "pid": "1102", "tid": "stream 7", "ts": 27.5, "dur": 2})",
      R"({"ph": "X", "cat": "cpu_op", "name": "dup after args", "pid": 1, "tid": 2, "ts": 28, "dur": 1, "args": {"External id": 3}, "dur": 5})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ws before end", "pid": 1, "tid": 2, "ts": 28, "dur": 1, "args": {"External id": 3} })",
      R"({"ph": "X", "cat": "cpu_op", "name": "args not object", "pid": 1, "tid": 2, "ts": 28, "dur": 1, "args": 5})",
      R"({"ph": "X", "cat": "cpu_op", "name": "bad args", "pid": 1, "tid": 2, "ts": 28, "dur": 1, "args": {"External id": 3, "x": tru}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "esc pid", "pid": "a"b", "tid": 2, "ts": 28, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "neg pid", "pid": -1, "tid": 2, "ts": -28, "dur": -1.5})",
      R"({"ph": "X", "cat": "cpu_op", "name": "pid junk", "pid": 1x, "tid": 2, "ts": 28, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ts missing", "pid": 1, "tid": 2, "ts": , "dur": 1})",
      R"({"ph": "X", "cat": "cu"da", "name": "esc cat", "pid": 1, "tid": 2, "ts": 28, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "escaped ph", "pid": 1, "tid": 2, "ts": 29, "dur": 1})",
      R"({"ph": "XX", "cat": "cpu_op", "name": "long ph", "pid": 1, "tid": 2, "ts": 29, "dur": 1})",
      R"({"ph": "", "cat": "cpu_op", "name": "empty ph", "pid": 1, "tid": 2, "ts": 29, "dur": 1})",
      R"({"ph": "s", "id": [}, "ts": "not read"})",
      R"({"ph": "i", "s": "g", "name": 5, "pid": "", "tid": "", "ts": "x"})",
      R"({"ph": "M", "x": [[[[1]]]], "name": "meta", "args": {"name": "é"}})",
      R"({"ph": "X", "cat": "python_function", "name": "dropped in layout", "pid": 1, "tid": 2, "ts": 30, "dur": 1, "args": {"Python id": [}})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 31.250, "dur": 4.000, "args": {"External id": 9, "cbid": 211, "correlation": 101, "exec_id": 3}})",
      R"({"ph": "X", "cat": "kernel", "name": "void k<float>(int, float*) [clone]", "pid": 0, "tid": 7, "ts": 32.001, "dur": 10.500, "args": {"External id": 9, "device": 0, "stream": 7, "correlation": 101, "grid": [64, 1, 1], "block": [256, 1, 1]}})",
      // Times read in one pass (ScanMicrosToNanos) or handed to the generic parse.
      R"({"ph": "X", "cat": "cpu_op", "name": "t17", "pid": 1, "tid": 2, "ts": 12345678901234567, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t16 over", "pid": 1, "tid": 2, "ts": 9999999999999999, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t epoch", "pid": 1, "tid": 2, "ts": 1712195495511766.201, "dur": 0.0001})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t dot", "pid": 1, "tid": 2, "ts": 12., "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t exp", "pid": 1, "tid": 2, "ts": 1.5E3, "dur": 2e0})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t zeros", "pid": 1, "tid": 2, "ts": 00012.5, "dur": 1.2.3})",
      R"({"ph": "X", "cat": "cpu_op", "name": "t sign", "pid": 1, "tid": 2, "ts": 5, "dur": 1-2})",
      // args' leading "External id" read by its literal, or handed to ReadObject.
      R"({"ph": "X", "cat": "cpu_op", "name": "ext only", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12}})",
      R"({"ph": "X", "cat": "kernel", "name": "ext then corr", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12, "correlation": 13, "External id": 14}})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "ext ws", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12 , "correlation": 13}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext 18", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 123456789012345678}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext 19", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 9223372036854775807}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext 19 over", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 9223372036854775808}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext 25", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 1234567890123456789012345}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext frac", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12.0, "correlation": 3}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext neg", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": -12}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext exp", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 1e2}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext junk", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12x}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext str", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": "12"}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext none", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": }})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext rest bad", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12, "x": [}, "y": ]}})",
      R"({"ph": "X", "cat": "kernel", "name": "ext rest bad k", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12, "x": tru}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "ext no close", "pid": 1, "tid": 2, "ts": 40, "dur": 1, "args": {"External id": 12 "x": 1}})",
      // The rest of a flow event or of a host op's args skipped 16 bytes at a time where flat
      // (SkipFlatObjectRest), else structurally: braces, brackets, quotes and escapes in strings.
      R"({"ph": "s"})",
      R"({"ph": "s", "id": 5, "name": "a}b", "cat": "ac2g", "x": "}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}", "y": "}"})",
      R"({"ph": "f", "id": 5, "name": "q"}", "cat": "fwdbwd", "bp": "e"})",
      R"({"ph": "s", "id": 5, "name": "x]y", "cat": "ac2g"})",
      R"({"ph": "s", "id": 5, "name": "a{b}", "cat": "ac2g"})",
      R"({"ph": "s", "id": 5, "name": "a\", "cat": "ac2g"})",
      R"({"ph": "s", "id": 5, "pid": 1, "tid": 2, "ts": 22, "cat": "ac2g", "name": "ac2g", "args": {"a": [1, {"b": "}"}]}})",
      R"({"ph": "s", "id": 1 ], "name": "after bracket"})",
      R"({"ph": "i", "s": "g", "name": """""""""""""""""}"})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args rest strings", "pid": 1, "tid": 2, "ts": 41, "dur": 1, "args": {"External id": 12, "Ev Idx": 12, "s": "}}}}}}}}}}}}}}}}}}}}}}}}}", "t": "]"}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args rest escape", "pid": 1, "tid": 2, "ts": 41, "dur": 1, "args": {"External id": 12, "s": "a}"b}"}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args rest nested", "pid": 1, "tid": 2, "ts": 41, "dur": 1, "args": {"External id": 12, "Input Dims": [[4, 512], [512]], "t": {"u": "}"}}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args rest unclosed", "pid": 1, "tid": 2, "ts": 41, "dur": 1, "args": {"External id": 12, "s": "}})",
      // args members after the leading External id read by literal (`, "key": <number>`), or
      // handed to ReadObject's key loop from the member that is not of that form.
      R"({"ph": "X", "cat": "kernel", "name": "m str", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "device": "0", "correlation": 5}})",
      R"({"ph": "X", "cat": "kernel", "name": "m esc key", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "dev"ice": 0, "correlation": 5}})",
      R"({"ph": "X", "cat": "kernel", "name": "m two spaces", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9,  "correlation": 5}})",
      R"({"ph": "X", "cat": "kernel", "name": "m neg", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "correlation": -5}})",
      R"({"ph": "X", "cat": "kernel", "name": "m dup", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "correlation": 5.5, "External id": 3}})",
      R"({"ph": "X", "cat": "kernel", "name": "m huge", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "stream": 7, "correlation": 99999999999999999999}})",
      R"({"ph": "X", "cat": "kernel", "name": "m junk", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "correlation": 5x}})",
      R"({"ph": "X", "cat": "kernel", "name": "m ws close", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "device": 0 }})",
      R"({"ph": "X", "cat": "kernel", "name": "m no ids", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "device": 0, "stream": 7}})",
      R"({"ph": "X", "cat": "kernel", "name": "m exec not wanted", "pid": 0, "tid": 7, "ts": 50, "dur": 1, "args": {"External id": 9, "exec_id": 4, "correlation": 7, "x": [}})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "m join", "pid": 1, "tid": 2, "ts": 50, "dur": 1, "args": {"External id": 9, "cbid": 211, "correlation": 101, "nrt_sequence_id": 12, "exec_id": "4"}})",
      R"({"ph": "X", "cat": "cuda_driver", "name": "m join num", "pid": 1, "tid": 2, "ts": 50, "dur": 1, "args": {"External id": 9, "exec_id": 4, "nrt_sequence_id": 12, "correlation": 101, "x": 1}})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "m colon", "pid": 1, "tid": 2, "ts": 50, "dur": 1, "args": {"External id": 9, "cbid" : 211, "correlation": 101}})",
      // Rests with brackets (SkipFlatObjectRest hands them to SkipNested): nesting, brackets in
      // strings, mismatched kinds, escapes further on.
      R"({"ph": "X", "cat": "python_function", "name": "py", "pid": 1, "tid": 2, "ts": 60, "dur": 1, "args": {"Python parent id": 1, "Python id": 5, "s": "]}", "t": [{"u": "[{"}]}})",
      R"({"ph": "X", "cat": "python_function", "name": "py deep", "pid": 1, "tid": 2, "ts": 60, "dur": 1, "args": {"a": [[[[[[[[[[[[1]]]]]]]]]]]], "b": {"c": {"d": {"e": {"f": {"g": {"h": {}}}}}}}}})",
      R"({"ph": "X", "cat": "python_function", "name": "py seven", "pid": 1, "tid": 2, "ts": 60, "dur": 1, "args": {"a": [[[[[[1]]]]]]}})",
      R"({"ph": "X", "cat": "python_function", "name": "py mixed", "pid": 1, "tid": 2, "ts": 60, "dur": 1, "args": {"a": [1, 2}, "b": ]}})",
      R"({"ph": "X", "cat": "python_function", "name": "py escape late", "pid": 1, "tid": 2, "ts": 60, "dur": 1, "args": {"a": [1, 2], "b": "x"y]"}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "outer op", "pid": 1, "tid": 2, "ts": 61, "dur": 1, "args": {"External id": 3, "Ev Idx": 3, "Sequence number": 1, "Fwd thread id": 0, "Input Dims": [[4, 512], [512, 512], [512]], "Input type": ["float", "float"]}})",
      R"({"ph": "X", "cat": "kernel", "name": "kernel rest", "pid": 0, "tid": 7, "ts": 62, "dur": 1, "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 4, "grid": [64, 1, 1], "block": [256, 1, 1], "s": "}]"}})",
      R"({"ph": "f", "id": 5, "pid": 1, "tid": 2, "ts": 23, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e", "args": {"a": [{"b": [1]}]}})",
  };
  return v;
}

TEST(TraceStreamLayout, EachVariantAloneReadsAlike) {
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
        ASSERT_EQ(b.layout, b.keyed) << "event: " << ev << "\npad " << pad << " opt " << opt;
      }
    }
  }
}

TEST(TraceStreamLayout, AllVariantsTogetherReadAlike) {
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
  EXPECT_FALSE(b.layout.starts_with("error")) << b.layout;
  EXPECT_EQ(b.layout, b.keyed);
  // And through gzip chunks and a legacy array.
  const Both g = Parse(Gzip(text));
  EXPECT_EQ(g.layout, b.layout);
  EXPECT_EQ(g.keyed, b.keyed);
  const std::string legacy =
      text.substr(std::string(R"({"traceEvents": )").size(),
                  text.size() - std::string(R"({"traceEvents": )").size() - 1);
  const Both l = Parse(legacy);
  EXPECT_EQ(l.layout, l.keyed);
}

TEST(TraceStreamLayout, FixturesReadAlike) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Fixture(""))) {
    if (entry.path().extension() != ".json") continue;
    const std::string text = ReadAll(entry.path());
    const Both b = Parse(text);
    EXPECT_EQ(b.layout, b.keyed) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 5);
}

// ReadTraceFile of `text` written to a file, read `chunk` bytes at a time, against the same
// text parsed from memory (one window): the same events, counts and errors.
void ExpectFileReadsAlike(const TempDir& dir, const std::string& text,
                          const std::vector<size_t>& chunks, const TraceReadOptions& options) {
  const std::filesystem::path p = dir.Write("t.json", text);
  const std::string whole = Outcome(text, options, p.string());
  for (size_t chunk : chunks) {
    TraceReadOptions o = options;
    o.file_chunk_bytes = chunk;
    ASSERT_EQ(Outcome(ReadTraceFile(p, o)), whole) << "chunk " << chunk << "\n" << text;
  }
}

TEST(TraceStreamFile, EachVariantAcrossChunkEnds) {
  const std::set<std::string> host = {"cpu_op", "user_annotation"};
  const std::set<std::string> keep = {"cpu_op", "kernel", "cuda_runtime", "user_annotation"};
  TempDir dir;
  for (const std::string& ev : Variants()) {
    // Chunks of 192-260 bytes hold the variants whole (the carried-over room is a quarter
    // chunk: longer ones switch to the mapping); padding moves each across the chunk's end.
    for (int pad = 0; pad < 70; pad += 5) {
      const std::string text = R"({"traceEvents": [)" + std::string(static_cast<size_t>(pad), ' ') +
                               Variants()[0] + ",\n  " + ev + ", " + Variants()[0] + ", " +
                               Variants()[1] + "]}";
      TraceReadOptions options;
      options.host_categories = &host;
      options.keep_categories = &keep;
      ExpectFileReadsAlike(dir, text, {192, 200, 211, 223, 256, 260, 4096}, options);
      ExpectFileReadsAlike(dir, text, {211}, {});
    }
  }
}

TEST(TraceStreamFile, AllVariantsTogetherAtManyChunkSizes) {
  std::string text = R"({"traceEvents": [)";
  bool first = true;
  for (int rep = 0; rep < 3; ++rep) {
    for (const std::string& ev : Variants()) {
      const std::string alone = R"({"traceEvents": [)" + ev + "]}";
      if (Outcome(alone, {}).starts_with("error")) continue;
      if (!first) text += ",\n  ";
      first = false;
      text += ev;
    }
  }
  text += "]}";
  std::vector<size_t> chunks;
  for (size_t c = 400; c < 700; ++c) chunks.push_back(c);  // every offset of every event
  TempDir dir;
  ExpectFileReadsAlike(dir, text, chunks, {});
  // A legacy array, and the document's end cut at every byte of the last events.
  ExpectFileReadsAlike(dir, text.substr(16, text.size() - 17), {401, 512}, {});
  for (size_t cut = text.size() - 400; cut < text.size(); cut += 3) {
    ExpectFileReadsAlike(dir, text.substr(0, cut), {401, 512}, {});
  }
}

TEST(TraceStreamFile, LargeEventSwitchesToTheMapping) {
  // Units longer than the carried-over room (a quarter chunk) continue from the mapped file:
  // one early, one late, one the whole rest of the file, and a huge trailing whitespace.
  const std::string big =
      R"({"ph": "X", "cat": "cpu_op", "name": ")" + std::string(5000, 'n') +
      R"(", "pid": 1, "tid": 2, "ts": 7, "dur": 1, "args": {"External id": 1}})";
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 200; ++i) {
    text += (i == 0 ? "" : ",\n  ") + (i == 3 || i == 150 ? big : Variants()[i % 2]);
  }
  TempDir dir;
  ExpectFileReadsAlike(dir, text + "]}", {256, 1024, 1500}, {});
  ExpectFileReadsAlike(dir, text + "]}" + std::string(10000, ' '), {256, 1024}, {});
  ExpectFileReadsAlike(dir, text + ", " + big, {1024}, {});  // truncated inside the big one
}

TEST(TraceStreamFile, WindowsAreTheFileBytes) {
  // FileInput itself: each window is the file's bytes from the kept position on, the kept
  // bytes carried in front, and the input ends where the file does.
  std::string text;
  for (int i = 0; i < 3000; ++i) text += static_cast<char>('a' + i % 23);
  TempDir dir;
  const std::filesystem::path p = dir.Write("bytes", text);
  absl::StatusOr<std::unique_ptr<stream::MappedFile>> file = stream::MappedFile::Open(p);
  ASSERT_TRUE(file.ok());
  stream::FileInput in(**file, 400);  // 100 bytes of room
  size_t offset = 0;                  // of in.begin() in the file
  size_t reads = 0;
  const char* keep = in.begin();
  while (in.More(keep)) {
    ++reads;
    const std::string window(in.begin(), in.end());
    ASSERT_EQ(window, text.substr(offset, window.size())) << "read " << reads;
    ASSERT_LE(window.size(), 500u);
    // Keep the last 37 bytes (then 0, then 99): carried over, as a reader would.
    const size_t kept = reads % 3 == 0 ? 37 : (reads % 3 == 1 ? 0 : 99);
    keep = in.end() - std::min(kept, window.size());
    offset += static_cast<size_t>(keep - in.begin());
  }
  EXPECT_EQ(offset + static_cast<size_t>(in.end() - keep), text.size());
  EXPECT_GE(reads, 7u);
}

}  // namespace
}  // namespace devtime::trace::testing
