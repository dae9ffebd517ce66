// Bad input: every failure is an absl error naming the file and, for events, the index and
// the field. Nothing crashes.
#include <zlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// Summarizes `content` written to a temp file; returns the error message ("" when OK).
std::string ErrorFor(const std::string& content, absl::StatusCode* code = nullptr) {
  TempDir dir;
  const auto p = dir.Write("bad.json", content);
  absl::StatusOr<TraceSummary> s = Summarize(p);
  if (code) *code = s.status().code();
  if (s.ok()) return "";
  const std::string msg(s.status().message());
  EXPECT_NE(msg.find(p.string()), std::string::npos) << "message must name the file: " << msg;
  return msg;
}

TEST(TraceErrors, MissingPathIsNotFound) {
  absl::StatusOr<TraceSummary> s = Summarize("/nonexistent/devtime/trace.json");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/devtime/trace.json"), std::string::npos);
}

TEST(TraceErrors, EmptyFile) {
  absl::StatusCode code;
  EXPECT_NE(ErrorFor("", &code).find("empty file"), std::string::npos);
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ErrorFor(" \n").find("empty file"), std::string::npos);
}

TEST(TraceErrors, NotJson) { EXPECT_NE(ErrorFor("hello world"), ""); }

TEST(TraceErrors, WrongTopLevelType) {
  EXPECT_NE(ErrorFor("42").find("neither an event array nor an object"), std::string::npos);
  EXPECT_NE(ErrorFor("\"x\"").find("neither an event array nor an object"), std::string::npos);
  EXPECT_NE(ErrorFor(R"({"schemaVersion": 1})").find("no 'traceEvents'"), std::string::npos);
  EXPECT_NE(ErrorFor(R"({"traceEvents": {}})").find("'traceEvents' is not an array"),
            std::string::npos);
}

TEST(TraceErrors, EventMissingTsNamesIndexAndField) {
  const std::string msg = ErrorFor(R"({"traceEvents": [
    {"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
    {"ph": "X", "name": "b", "dur": 2, "pid": 1, "tid": 1}]})");
  EXPECT_NE(msg.find("event 1: missing field 'ts'"), std::string::npos) << msg;
}

TEST(TraceErrors, EventWithBadFieldTypes) {
  EXPECT_NE(ErrorFor(R"([{"ph": "X", "name": "a", "ts": "1", "dur": 2}])")
                .find("event 0: field 'ts' is not a number"),
            std::string::npos);
  EXPECT_NE(
      ErrorFor(R"([{"ph": "X", "name": 5, "ts": 1, "dur": 2}])").find("event 0: field 'name'"),
      std::string::npos);
  EXPECT_NE(ErrorFor(R"([{"ph": "X", "name": "a", "ts": 1}])").find("event 0: missing field 'dur'"),
            std::string::npos);
  EXPECT_NE(ErrorFor(R"([{"name": "a", "ts": 1}])").find("event 0: missing field 'ph'"),
            std::string::npos);
  EXPECT_NE(ErrorFor(R"([1, 2])").find("event 0: not a JSON object"), std::string::npos);
  EXPECT_NE(ErrorFor(R"([{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": [1]}])")
                .find("event 0: field 'pid'"),
            std::string::npos);
}

TEST(TraceErrors, InstantAndMetadataEventsNeedNoDuration) {
  EXPECT_EQ(ErrorFor(R"({"traceEvents": [{"name": "thread_name", "ph": "M", "pid": 0, "tid": 7},
    {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 5}]})"),
            "");
}

TEST(TraceErrors, TruncatedJsonAtEveryLength) {
  const std::string full = ReadAll(Fixture("kineto_int_ts.json"));
  // Every proper prefix must fail cleanly (never crash, never succeed).
  for (size_t len = 0; len + 1 < full.size(); len += 7) {
    const std::string prefix = full.substr(0, len);
    if (prefix.find_first_not_of(" \n") == std::string::npos) continue;
    EXPECT_NE(ErrorFor(prefix), "") << "prefix length " << len;
  }
}

TEST(TraceErrors, TrailingGarbage) { EXPECT_NE(ErrorFor(R"([] [])"), ""); }

TEST(TraceErrors, TruncatedGzip) {
  const std::string gz = ReadAll(Fixture("kineto_cuda_basic.json.gz"));
  const std::string msg = ErrorFor(gz.substr(0, gz.size() / 2));
  EXPECT_NE(msg.find("gzip stream is truncated"), std::string::npos) << msg;
}

TEST(TraceErrors, CorruptGzip) {
  std::string gz = ReadAll(Fixture("kineto_cuda_basic.json.gz"));
  for (size_t i = 20; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  const std::string msg = ErrorFor(gz);
  EXPECT_NE(msg.find("gzip"), std::string::npos) << msg;
}

}  // namespace
}  // namespace devtime::trace::testing

namespace devtime::trace::testing {
namespace {

TEST(TraceErrors, SurvivesRandomByteMutations) {
  // Deterministic mutations of a real fixture: any outcome is fine except a crash or hang.
  const std::string full = ReadAll(Fixture("kineto_cuda_basic.json"));
  const char kBytes[] = {'{', '}', '[', ']', '"', ',', ':', '.', '-', '0', '9', 'e', '\\', '\0'};
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  TempDir dir;
  int ok = 0;
  for (int i = 0; i < 300; ++i) {
    std::string mutated = full;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < edits; ++k) {
      mutated[next() % mutated.size()] = kBytes[next() % sizeof(kBytes)];
    }
    absl::StatusOr<TraceSummary> s = Summarize(dir.Write("m.json", mutated));
    if (s.ok()) ++ok;
  }
  SUCCEED() << ok << " of 300 mutations still parsed";
}

}  // namespace
}  // namespace devtime::trace::testing
