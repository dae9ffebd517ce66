// The streaming gzip input (byte_source.h GzipInput, ISA-L igzip): concatenated members split
// anywhere, empty members, a stream cut at every length, garbage after a member, a bad CRC.
#include <string>

#include "agents/trace/kineto/json_trace_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

std::string SmallTrace(int events) {
  std::string out = R"({"traceEvents": [)";
  for (int i = 0; i < events; ++i) {
    if (i) out += ",\n";
    out += R"({"ph": "X", "cat": "cpu_op", "name": "op)" + std::to_string(i % 5) +
           R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(10 * i) +
           R"(, "dur": 3, "args": {"External id": )" + std::to_string(i) + "}}";
  }
  return out + "]}";
}

std::string Error(const std::string& bytes) {
  absl::StatusOr<RawTrace> t = ParseTraceJson(bytes.data(), bytes.size(), "in.json.gz");
  return t.ok() ? "" : std::string(t.status().message());
}

TEST(TraceStreamGzip, MembersSplitAnywhereReadAsOneStream) {
  const std::string text = SmallTrace(300);
  absl::StatusOr<RawTrace> plain = ParseTraceJson(text.data(), text.size(), "in");
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (size_t cut : {size_t{1}, size_t{17}, text.size() / 3, text.size() / 2, text.size() - 1}) {
    const std::string gz = Gzip(text.substr(0, cut)) + Gzip("") + Gzip(text.substr(cut));
    absl::StatusOr<RawTrace> t = ParseTraceJson(gz.data(), gz.size(), "in.json.gz");
    ASSERT_TRUE(t.ok()) << "cut " << cut << ": " << t.status();
    EXPECT_EQ(t->events.size(), plain->events.size()) << cut;
    EXPECT_EQ(t->events.back().external_id, plain->events.back().external_id) << cut;
  }
}

TEST(TraceStreamGzip, EveryCutIsAnErrorNamingGzip) {
  const std::string gz = Gzip(SmallTrace(40));
  for (size_t len = 2; len < gz.size(); ++len) {
    const std::string msg = Error(gz.substr(0, len));
    EXPECT_NE(msg.find("gzip stream is "), std::string::npos) << "length " << len << ": " << msg;
  }
  EXPECT_EQ(Error(gz), "");
}

TEST(TraceStreamGzip, GarbageAfterAMemberAndABadCrcAreCorrupt) {
  const std::string gz = Gzip(SmallTrace(40));
  EXPECT_NE(Error(gz + "garbage!").find("gzip stream is corrupt"), std::string::npos)
      << Error(gz + "garbage!");
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] = static_cast<char>(bad_crc[bad_crc.size() - 6] ^ 0x01);
  EXPECT_NE(Error(bad_crc).find("gzip stream is corrupt"), std::string::npos) << Error(bad_crc);
}

}  // namespace
}  // namespace devtime::trace::testing
