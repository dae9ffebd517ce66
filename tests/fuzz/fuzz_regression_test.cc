// Replays the fuzz seed corpus (tests/fuzz/corpus/<reader>/) and a set of nasty inputs through
// every reader in the normal build, so CI exercises them without clang/libFuzzer: truncated
// files, invalid UTF-8, huge integers, 10,000-deep nesting, 0-byte files. Each must end in a
// clear error or a summary — never a crash or a hang.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/neuron/neuron_reader.h"
#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace {
namespace {

namespace fs = std::filesystem;
using Target = std::function<int(const uint8_t*, size_t)>;
using ::devtime::trace::testing::Gzip;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> Corpus(const std::string& reader) {
  std::vector<std::string> out;
  const fs::path dir = fs::path(DEVTIME_SOURCE_DIR) / "tests/fuzz/corpus" / reader;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(ReadAll(e.path()));
  return out;
}

void Run(const Target& t, const std::string& input) {
  t(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

// Corpus files, every truncation of them (step 1 for small files), and the generic nasties.
void Replay(const std::string& reader, const Target& t) {
  std::vector<std::string> inputs = Corpus(reader);
  ASSERT_FALSE(inputs.empty()) << reader;
  const std::vector<std::string> seeds = inputs;
  for (const std::string& s : seeds) {
    const size_t step = s.size() < 4096 ? 1 : s.size() / 2048;
    for (size_t n = 0; n < s.size(); n += step) inputs.push_back(s.substr(0, n));
    std::string bad_utf8 = s;
    for (size_t i = 0; i < bad_utf8.size(); i += 97) bad_utf8[i] = static_cast<char>(0xC3);
    inputs.push_back(bad_utf8);
  }
  inputs.push_back("");
  inputs.push_back(std::string(1, '\0'));
  inputs.push_back(" \n\t");
  inputs.push_back(std::string(10000, '[') + std::string(10000, ']'));
  inputs.push_back(std::string(10000, '{'));
  inputs.push_back("{\"a\":" + std::string(10000, '[') + std::string(10000, ']') + "}");
  inputs.push_back(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 99999999999999999999999999,
    "dur": 1e400, "args": {"correlation": 184467440737095516160000}}]})");
  inputs.push_back("\x1f\x8b");
  inputs.push_back(Gzip(seeds.front()).substr(0, 20));
  for (const std::string& in : inputs) Run(t, in);
}

TEST(FuzzRegression, KinetoJsonCorpusAndNastyInputs) { Replay("kineto_json", fuzz::KinetoJson); }
TEST(FuzzRegression, NeuronSystemTraceCorpusAndNastyInputs) {
  Replay("neuron_system_trace", fuzz::NeuronSystemTrace);
}
TEST(FuzzRegression, PerfettoSystemTraceCorpusAndNastyInputs) {
  Replay("perfetto_system_trace", fuzz::PerfettoSystemTrace);
}
TEST(FuzzRegression, KeyAveragesCorpusAndNastyInputs) { Replay("key_averages", fuzz::KeyAverages); }
TEST(FuzzRegression, EnvironmentCorpusAndNastyInputs) { Replay("environment", fuzz::Environment); }

absl::Status ParseText(const std::string& text) {
  return ParseTraceJson(text.data(), text.size(), "in").status();
}

TEST(FuzzRegression, DeepNestingInsideAnEventNamesTheLimit) {
  const std::string deep = R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1,
    "args": {"x": )" + std::string(10000, '[') +
                           std::string(10000, ']') + "}}]}";
  const absl::Status st = ParseText(deep);
  EXPECT_NE(st.message().find("nested deeper than the limit of 1024 levels"), std::string::npos)
      << st;
  EXPECT_NE(st.message().find("event 0"), std::string::npos) << st;
}

TEST(FuzzRegression, InvalidUtf8InANameIsAnError) {
  const absl::Status st =
      ParseText("[{\"ph\": \"X\", \"name\": \"a\xff\", \"ts\": 1, \"dur\": 1}]");
  EXPECT_NE(st.message().find("event 0: field 'name' is not valid UTF-8"), std::string::npos) << st;
}

TEST(FuzzRegression, HugeTimestampIsAnError) {
  const absl::Status st =
      ParseText(R"([{"ph": "X", "name": "a", "ts": 99999999999999999999999, "dur": 1}])");
  EXPECT_NE(st.message().find("event 0: field 'ts' is not a valid time"), std::string::npos) << st;
}

TEST(FuzzRegression, HugeCorrelationReadsAsAbsent) {
  const std::string text = R"([{"ph": "X", "name": "a", "ts": 1, "dur": 1,
        "args": {"correlation": 99999999999999999999999, "External id": "12"}}])";
  absl::StatusOr<RawTrace> t = ParseTraceJson(text.data(), text.size(), "in");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->events[0].correlation, -1);
  EXPECT_EQ(t->events[0].external_id, 12);
}

TEST(FuzzRegression, TruncatedInputSaysWhere) {
  const absl::Status st = ParseText(R"({"traceEvents": [{"ph": "X", "name": "a", "ts)");
  EXPECT_NE(st.message().find("truncated JSON: the input ends inside event 0"), std::string::npos)
      << st;
}

TEST(FuzzRegression, ZeroByteInputs) {
  EXPECT_NE(ParseText("").message().find("empty file"), std::string::npos);
  EXPECT_FALSE(ParseNeuronSystemTrace(std::string(64, '\0'), 0, "in").ok());
}

}  // namespace
}  // namespace devtime::trace
