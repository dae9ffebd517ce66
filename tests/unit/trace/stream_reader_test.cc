// The streaming reader: structural skipping across 64-byte blocks, gzip chunk boundaries,
// category filtering (json_trace_reader.h).
#include <zlib.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>

#include "agents/trace/io/json_blocks.h"
#include "agents/trace/kineto/json_trace_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// Skipped values full of traps: brackets and escaped quotes inside strings, backslashes,
// nesting, at every alignment against the 64-byte blocks.
std::string TrickyTrace(int events) {
  std::string out = R"({"traceEvents": [)";
  for (int i = 0; i < events; ++i) {
    if (i) out += ",\n";
    const std::string pad(static_cast<size_t>(i % 97), 'x');
    out += R"({"ph": "X", "cat": "cpu_op", "noise": [")" + pad + R"(]}{[\"\\", {"a": "}]"},
      [[1, 2], {"b": ")" +
           std::string(static_cast<size_t>(i % 131), '[') + R"("}]],
      "name": "op)" +
           std::to_string(i % 7) + R"(", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(1000 + i * 10) + R"(, "dur": 5, "args": {"Input Dims": [[)" +
           std::to_string(pad.size()) + std::string("], [\"]\"]], \"External id\": ") +
           std::to_string(i) + "}}";
    out += R"(, {"ph": "X", "cat": "python_function", "name": "py", "pid": 1, "tid": 1, "ts": 1,
      "dur": 1, "args": {"Python id": ")" +
           std::string(static_cast<size_t>(i % 67), '{') + R"(\"", "x": "[}]"}})";
  }
  return out + "]}";
}

TEST(TraceStreamReader, SkipsTrickyValuesAtEveryAlignment) {
  const std::string text = TrickyTrace(600);
  absl::StatusOr<RawTrace> t = ParseTraceJson(text.data(), text.size(), "in");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 1200u);
  for (size_t i = 0; i < 600; ++i) {
    const RawEvent& e = t->events[2 * i];
    EXPECT_EQ(t->strings.Get(e.name), "op" + std::to_string(i % 7)) << i;
    EXPECT_EQ(e.external_id, static_cast<int64_t>(i)) << i;
    EXPECT_EQ(e.ts_ns, static_cast<int64_t>(1000 + i * 10) * 1000) << i;
  }
}

TEST(TraceStreamReader, FilteredCategoriesAreCountedNotKept) {
  const std::string text = TrickyTrace(600);
  const std::set<std::string> keep = {"cpu_op"};
  TraceReadOptions options;
  options.keep_categories = &keep;
  absl::StatusOr<RawTrace> t = ParseTraceJson(text.data(), text.size(), "in", options);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->events.size(), 600u);
  EXPECT_EQ(t->complete_events, 1200u);
  EXPECT_EQ(t->total_events, 1200u);
  EXPECT_EQ(t->events[599].external_id, 599);
}

TEST(TraceStreamReader, GzipAcrossManyChunksEqualsPlain) {
  std::string text = TrickyTrace(40000);  // ~20 MB: several 4 MiB inflate chunks
  ASSERT_GT(text.size(), size_t{9} << 20);
  TempDir dir;
  const auto plain = dir.Write("t.json", text);
  const auto gz = dir.Write("t.json.gz", Gzip(text));
  absl::StatusOr<RawTrace> a = ReadTraceFile(plain);
  absl::StatusOr<RawTrace> b = ReadTraceFile(gz);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->events.size(), b->events.size());
  for (size_t i = 0; i < a->events.size(); i += 997) {
    EXPECT_EQ(a->events[i].ts_ns, b->events[i].ts_ns);
    EXPECT_EQ(a->strings.Get(a->events[i].name), b->strings.Get(b->events[i].name));
  }
  // Truncated inside the stream: a clear error, wherever the cut falls.
  const std::string z = Gzip(text);
  const auto cut = dir.Write("cut.json.gz", z.substr(0, z.size() * 2 / 3));
  absl::StatusOr<RawTrace> c = ReadTraceFile(cut);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("gzip stream is truncated"), std::string::npos) << c.status();
}

TEST(TraceStreamReader, LongStringsAcrossBlocksInSkippedValues) {
  std::string text = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "big": {"s": ")";
  for (int i = 0; i < 5000; ++i) text += i % 50 == 0 ? "\\\"]}" : "ab{[";
  text += R"("}, "name": "after", "ts": 1, "dur": 2}]})";
  absl::StatusOr<RawTrace> t = ParseTraceJson(text.data(), text.size(), "in");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->strings.Get(t->events[0].name), "after");
}

// The AVX2 block loop is the SSE2 one on another instruction set: on random bytes rich in
// quotes, backslashes and brackets they stop at the same place for the same reason.
TEST(TraceStreamReader, Avx2AndSse2BlockScansAgree) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("pclmul")) {
    GTEST_SKIP() << "this CPU has no AVX2/PCLMUL";
  }
  std::mt19937 rng(12);
  const std::string alphabet = "\"\\{}[]ab ,:{{[[\"\"";
  for (int round = 0; round < 20000; ++round) {
    std::string bytes(64 + rng() % 400, ' ');
    // Mostly letters, so that blocks without a backslash (the block path) are common.
    for (char& c : bytes) c = rng() % 8 == 0 ? alphabet[rng() % alphabet.size()] : 'a';
    if (round % 2 == 0) {
      for (char& c : bytes) c = c == '\\' ? 'b' : c;
    }
    const int depth = round % 3 == 0 ? 1020 : 1;
    const int level = 1 + static_cast<int>(rng() % 3);
    const char* p = bytes.data();
    const char* e = p + bytes.size();
    const stream::BlockScan a = stream::ScanBlocksSse2(p, e, depth, level, kMaxJsonDepth);
    const stream::BlockScan b = stream::ScanBlocksAvx2(p, e, depth, level, kMaxJsonDepth);
    ASSERT_EQ(a.stop, b.stop) << round;
    ASSERT_EQ(a.p - p, b.p - p) << round;
    ASSERT_EQ(a.level, b.level) << round;
    ASSERT_EQ(a.in_string, b.in_string) << round;
  }
}

}  // namespace
}  // namespace devtime::trace::testing
