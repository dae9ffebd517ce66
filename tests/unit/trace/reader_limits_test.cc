// The readers' limits on hostile input (issue 11 item 7): timestamps that overflow when
// combined, gzip bombs, oversized values the reader only skips, and huge values quoted in error
// messages. Each is an INVALID_ARGUMENT naming the file, the event and the limit; none costs
// more than a bounded amount of memory. Big inputs are made here at run time.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "agents/trace/io/byte_source.h"
#include "agents/trace/io/quote.h"
#include "agents/trace/io/timestamp.h"
#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/neuron/neuron_reader.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// Expects `text` to contain `part`.
void ExpectHas(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

// The error of reading `json` as a Kineto trace from a file (OK when it reads).
absl::Status KinetoError(const std::string& json, const TraceReadOptions& options = {}) {
  TempDir dir;
  return ReadTraceFile(dir.Write("trace.json", json), options).status();
}

absl::Status NeuronError(const std::string& json) {
  TempDir dir;
  return ReadNeuronSystemTrace(dir.Write("system_profile.json", json)).status();
}

// Expects an INVALID_ARGUMENT whose message has each of `parts`.
void ExpectRefused(const absl::Status& st, std::initializer_list<std::string> parts) {
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  for (const std::string& part : parts) ExpectHas(std::string(st.message()), part);
}

// ---- checked timestamp arithmetic -------------------------------------------------------

TEST(ReaderLimits, CheckedAddAndSubSayWhenTheResultDoesNotFit) {
  EXPECT_EQ(CheckedAdd(1, 2), 3);
  EXPECT_EQ(CheckedAdd(INT64_MAX, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(INT64_MIN, -1), std::nullopt);
  EXPECT_EQ(CheckedSub(INT64_MIN, 1), std::nullopt);
  EXPECT_EQ(CheckedSub(0, INT64_MIN), std::nullopt);
  EXPECT_EQ(CheckedSub(5, 7), -2);
}

// The libFuzzer + UBSan finding: ts + dur in ns overflowed int64.
TEST(ReaderLimits, NeuronExplorerTimestampPlusDurationOverflowIsAnErrorNamingTheEvent) {
  ExpectRefused(
      NeuronError(R"({"trace_event": [
      {"name": "nrt_execute", "timestamp": 1, "duration": 2},
      {"name": "nc_exec_running", "timestamp": 1729888380003300000,
       "duration": 8009888380001000000}]})"),
      {"system_profile.json", "system trace event 1", "'timestamp' + 'duration'", "overflow"});
}

TEST(ReaderLimits, NeuronFetchApiClockShiftOverflowIsAnErrorNamingTheEvent) {
  // The sync point moves device time by cpu - nc = INT64_MAX - 1: the stop overflows.
  ExpectRefused(NeuronError(R"({"events": [
      {"event_type": "timestamp_sync_point", "nc_idx": 0,
       "data": {"cpu_timestamp_ns": 9223372036854775807, "nc_timestamp_ns": 1}},
      {"event_type": "nc_exec_running", "phase": "start", "tracking_id": 1, "nc_idx": 0,
       "data": {"nc_timestamp_ns": 1, "exec_id": 1}},
      {"event_type": "nc_exec_running", "phase": "stop", "tracking_id": 1, "nc_idx": 0,
       "data": {"nc_timestamp_ns": 10, "exec_id": 1}}]})"),
                {"system trace event 2", "host clock", "outside [0, int64 max] ns"});
}

// Intervals start at >= 0 ns, so that stop - start and the span of merged rows fit int64.
TEST(ReaderLimits, NeuronNegativeTimestampIsAnError) {
  ExpectRefused(NeuronError(R"({"trace_event": [
      {"name": "nrt_execute", "timestamp": -9223372036854775807, "duration": 1}]})"),
                {"system trace event 0", "negative 'timestamp'"});
}

TEST(ReaderLimits, NeuronFetchApiNegativeTimestampIsAnError) {
  ExpectRefused(NeuronError(R"({"events": [
      {"event_type": "nrt_execute", "phase": "start", "tracking_id": 1,
       "data": {"nc_timestamp_ns": -9223372036854775807}},
      {"event_type": "nrt_execute", "phase": "stop", "tracking_id": 1,
       "data": {"nc_timestamp_ns": 9223372036854775807}}]})"),
                {"system trace event 1", "negative timestamp"});
}

TEST(ReaderLimits, KinetoTimestampPlusDurationOverflowIsAnErrorNamingTheEvent) {
  // 9.2e18 ns + 1e18 ns: each fits int64, the sum does not.
  ExpectRefused(KinetoError(R"({"traceEvents": [
      {"ph": "X", "name": "ok", "ts": 1, "dur": 1},
      {"ph": "X", "name": "aten::mm", "ts": 9200000000000000, "dur": 1000000000000000}]})"),
                {"trace.json", "event 1", "'ts' + 'dur'", "overflow"});
}

TEST(ReaderLimits, KinetoBaseTimePlusEventEndOverflowIsAnErrorNamingTheEvent) {
  // baseTimeNanoseconds comes after the events: the check runs at the end of the document.
  ExpectRefused(KinetoError(R"({"traceEvents": [
      {"ph": "X", "name": "ok", "ts": 1, "dur": 1},
      {"ph": "X", "name": "late", "ts": 9000000000000000, "dur": 1}],
      "baseTimeNanoseconds": 9000000000000000000})"),
                {"event 1", "baseTimeNanoseconds", "overflow"});
}

// ---- gzip bombs -------------------------------------------------------------------------

// A gzip stream (concatenated members) that inflates to `prefix`, `spaces_mib` MiB of spaces,
// then `suffix`: ~1 KiB of input per MiB of output, so 1 GiB needs only ~1 MB here.
std::string SpaceBomb(const std::string& prefix, int spaces_mib, const std::string& suffix) {
  // Each Gzip() is one member; the reader inflates concatenated members as one stream.
  const std::string mib_of_spaces = Gzip(std::string(size_t{1} << 20, ' '));
  std::string out = Gzip(prefix);
  for (int i = 0; i < spaces_mib; ++i) out += mib_of_spaces;
  return out + Gzip(suffix);
}

// Resident set: current (VmRSS) or peak (VmHWM) in KiB, from /proc/self/status.
long StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// Parses `bytes` in a child process (a death-test fork: a fresh peak-RSS mark starting at the
// parent's current RSS) and exits 0 when it is refused naming `part` with the peak RSS growth
// under `max_mib`; otherwise prints why and exits 1.
[[noreturn]] void ParseAndCheckPeak(const std::string& bytes, const std::string& part,
                                    long max_mib) {
  const long before = StatusKib("VmRSS");
  absl::StatusOr<RawTrace> t = ParseTraceJson(bytes.data(), bytes.size(), "bomb.json.gz");
  const long grew_mib = (StatusKib("VmHWM") - before) / 1024;
  if (t.ok() || t.status().message().find(part) == std::string::npos) {
    std::fprintf(stderr, "not refused with '%s': %s\n", part.c_str(),
                 t.ok() ? "OK" : std::string(t.status().message()).c_str());
    std::_Exit(1);
  }
  if (grew_mib > max_mib) {
    std::fprintf(stderr, "peak RSS grew by %ld MiB (limit %ld)\n", grew_mib, max_mib);
    std::_Exit(1);
  }
  std::_Exit(0);
}

// The reported bomb: 1 GiB of spaces in ~1 MB of gzip used 800 MB before it was refused.
// Inside a string the whole unit is kept in the window, the worst case for memory.
TEST(ReaderLimits, GzipBombIsRefusedByRatioWithBoundedMemory) {
  const std::string bomb = SpaceBomb(R"({"traceEvents": [{"ph": "X", "args": ")", 1024, R"("}]})");
  ASSERT_LT(bomb.size(), size_t{2} << 20);
  // Refused once 64 MiB came out: the window (64 MiB) and the next one partly filled.
  EXPECT_EXIT(ParseAndCheckPeak(bomb, "200 times its compressed size", 200),
              ::testing::ExitedWithCode(0), "");
}

TEST(ReaderLimits, GzipBombErrorNamesTheFileAndTheLimit) {
  TempDir dir;
  const auto p = dir.Write("trace.json.gz", SpaceBomb("[", 128, "]"));
  ExpectRefused(ReadTraceFile(p).status(), {p.string(), "gzip stream", "200 times", "limit"});
}

TEST(ReaderLimits, GzipBombInAWholeFileReaderIsRefused) {
  // Neuron system traces are inflated whole into memory (file_reader.h).
  TempDir dir;
  const auto p = dir.Write("system_profile.json", SpaceBomb(R"({"trace_event": [)", 128, "]}"));
  ExpectRefused(ReadNeuronSystemTrace(p).status(), {p.string(), "200 times", "limit"});
}

TEST(ReaderLimits, GunzipBudgetLimitsTotalSizeAndRatio) {
  stream::GunzipBudget ratio;
  EXPECT_EQ(ratio.Add(1, stream::kGunzipRatioFreeBytes), "");  // the first 64 MiB are free
  ExpectHas(ratio.Add(0, 4096), "200 times");
  stream::GunzipBudget total;
  EXPECT_EQ(total.Add(uint64_t{1} << 30, stream::kMaxGunzippedBytes), "");
  ExpectHas(total.Add(0, 1), "more than 4 GiB (limit)");
}

TEST(ReaderLimits, OrdinaryGzipIsNotRefused) {
  // ~40x: a trace of one event repeated, more compressible than any real one (13-29x).
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 400000; ++i) {
    json += R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": )" + std::to_string(i) +
            R"(, "dur": 1},)";
  }
  json += R"({"ph": "M", "name": "end"}]})";
  const std::string gz = Gzip(json);
  ASSERT_GT(json.size(), stream::kGunzipRatioFreeBytes / 4);
  absl::StatusOr<RawTrace> t = ParseTraceJson(gz.data(), gz.size(), "ok.json.gz");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->events.size(), 400000u);
}

// ---- the per-event limit on values that are only skipped ---------------------------------

// A trace whose event 1 holds a `mib` MiB string under `key`, written as a sparse file (the
// string's bytes are a hole: zeros, which the skipper does not look at), so that the test
// needs neither the disk nor the time to write them.
std::filesystem::path BigStringTrace(const TempDir& dir, const std::string& cat,
                                     const std::string& key, size_t mib) {
  const std::string head = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k",)"
                           R"( "ts": 1, "dur": 1}, {"ph": "X", "cat": ")" +
                           cat + R"(", ")" + key + R"(": ")";
  const std::string tail = R"(", "name": "n", "ts": 2, "dur": 1}]})";
  const auto p = dir.Write("big.json", head);
  const int fd = ::open(p.c_str(), O_WRONLY);
  const off_t at = static_cast<off_t>(head.size() + (mib << 20));
  EXPECT_EQ(::pwrite(fd, tail.data(), tail.size(), at), static_cast<ssize_t>(tail.size()));
  ::close(fd);
  return p;
}

TEST(ReaderLimits, OversizedStringInAnEventOfASkippedCategoryIsRefused) {
  TempDir dir;
  const std::set<std::string> keep = {"kernel"};
  ASSERT_TRUE(  // 1 MiB reads
      ReadTraceFile(BigStringTrace(dir, "python_function", "args", 1), {.keep_categories = &keep})
          .ok());
  const auto big = BigStringTrace(dir, "python_function", "args", 300);
  ExpectRefused(ReadTraceFile(big, {.keep_categories = &keep}).status(),
                {big.string(), "event 1", "larger than the limit of 256 MiB"});
}

TEST(ReaderLimits, OversizedSkippedFieldOfAKeptEventIsRefused) {
  TempDir dir;
  const auto big = BigStringTrace(dir, "kernel", "unread_field", 300);
  ExpectRefused(ReadTraceFile(big).status(), {"event 1", "larger than the limit of 256 MiB"});
}

// ---- quoting input in messages ----------------------------------------------------------

TEST(ReaderLimits, QuoteKeepsShortTextWhole) { EXPECT_EQ(Quote("1e999"), "1e999"); }

TEST(ReaderLimits, QuoteCutsLongTextAtACharacterBoundaryAndSaysTheLength) {
  // 199 ASCII bytes then 'é' (2 bytes) straddling byte 200: cut before it.
  const std::string text = std::string(199, 'a') + "\xC3\xA9" + std::string(1000, 'b');
  const std::string q = Quote(text);
  EXPECT_EQ(q, std::string(199, 'a') + "\u2026 (1201 bytes)");
}

TEST(ReaderLimits, MillionDigitTimestampIsQuotedShortInTheError) {
  const std::string digits(1000000, '7');
  const absl::Status st = KinetoError(R"({"traceEvents": [{"ph": "X", "name": "n", "ts": )" +
                                      digits + R"(, "dur": 1}]})");
  ExpectRefused(st, {"event 0", "field 'ts' is not a valid time", "(1000000 bytes)"});
  EXPECT_LT(st.message().size(), 600u);
}

TEST(ReaderLimits, HugeTimestampUnitIsQuotedShortInTheError) {
  const absl::Status st = NeuronError(R"({"trace_event": [{"name": "x", "timestamp": 1,)"
                                      R"( "duration": 1, "timestamp_unit": ")" +
                                      std::string(1000000, 'u') + R"("}]})");
  ExpectRefused(st, {"unsupported timestamp_unit", "(1000000 bytes)"});
  EXPECT_LT(st.message().size(), 600u);
}

}  // namespace
}  // namespace devtime::trace::testing
