// Validation of a RunSummary against the wire contract (proto/devtime/v1/run.proto): the one
// validator the collector applies to uploads and the agent applies before it spools a run.
// Runs before anything touches the database, so an invalid upload stores nothing; and it
// admits only values the store can hold (services/collector/store/migrations.cc) and whose
// sums stay finite, so a run it accepts never fails later as a database or arithmetic error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "devtime/v1/jobs.pb.h"
#include "devtime/v1/run.pb.h"

namespace devtime::wire {

// The bounds on values (limits.h has the bounds on sizes and counts of entries).
//
// Step numbers and capture step counts: run_steps.step is a PostgreSQL integer, and the
// collector divides by the step count as an int.
inline constexpr uint32_t kMaxStepNumber = std::numeric_limits<int32_t>::max();
// Every uint64 count (calls, executions, events dropped, artifact bytes): op_stats.calls is a
// PostgreSQL bigint, and every reader keeps counts as signed 64-bit integers.
inline constexpr uint64_t kMaxCount = std::numeric_limits<int64_t>::max();
// Every duration, in microseconds (about 31.7 years): the collector's sums over a run (20,000
// operators, 10,000 samples each, and their squares for the noise) then stay far below the
// largest double, so no series point or figure it computes can be infinite.
inline constexpr double kMaxDurationUs = 1e15;
// How far below 0 a per-step self-CPU sample (OpStat.step_self_device_us of a CPU run) may go:
// 1 us per call of the op. torch 1.13's legacy profiler truncates each duration to whole us, so
// a parent's self time (its duration minus its children's) can be up to 1 us below 0 per call.
// The samples are sent exact, so that their mean is the op's time in the steps over the steps
// (issue 23: a step of -9 us sent as 0 made the mean 7.6 where the total over 5 steps is 5.8);
// a figure shown to a user is clamped where it is shown. Device-time samples stay >= 0.
inline constexpr double kSelfCpuRoundingUsPerCall = 1.0;
// started_at and finished_at: after 1970-01-01T00:00:00Z, up to 9999-12-31T23:59:59.999999999Z
// (protobuf's Timestamp range, inside PostgreSQL's timestamptz).
inline constexpr int64_t kMinTimeSeconds = 1;
inline constexpr int64_t kMaxTimeSeconds = 253'402'300'799;
// Issue 24, MONITOR runs: a window spans at most 7 days; a latency sketch has at most 4,096
// buckets and a relative accuracy of at most 5 %; outcomes and errors at most 32 kinds each.
inline constexpr int64_t kMaxMonitorWindowSeconds = 7 * 24 * 3600;
inline constexpr std::size_t kMaxSketchBuckets = 4096;
inline constexpr double kMaxSketchAccuracy = 0.05;
inline constexpr std::size_t kMaxMonitorKinds = 32;

// OK, or INVALID_ARGUMENT / RESOURCE_EXHAUSTED whose message starts with the offending
// field's path, e.g. "run.ops[3].self_device_us: must be finite, >= 0 and <= 1e+15, got nan".
absl::Status ValidateRun(const v1::RunSummary& run);

// True for the canonical lowercase 8-4-4-4-12 hex UUID form.
bool IsCanonicalUuid(const std::string& text);

// True when `text` is valid UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF) without control characters (U+0000-U+001F, U+007F-U+009F) or bidirectional
// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): the rule for every text
// field of a run (a name that reads differently from what it holds is not a name).
bool IsPrintableText(std::string_view text);

// `text` made printable for a text field of at most `max_bytes` (a job's stderr as a
// reason): tabs and line breaks become spaces, other forbidden characters and broken bytes
// U+FFFD, and it is cut at a character boundary.
std::string PrintableText(std::string_view text, std::size_t max_bytes);

// `text` with every character IsPrintableText forbids written as a visible escape: "\x1b" for
// a C0 or C1 control or DEL, "\u202e" for a bidi embedding, override or isolate, "\xff" for
// each byte that is not UTF-8. What was printable stays as it was (an operator name keeps its
// meaning, and one that was already printable keeps its series).
std::string EscapedText(std::string_view text);

// A job's text fields (issue 26): model and workload printable (IsPrintableText), the command
// and env values valid UTF-8 without NUL. OK, or INVALID_ARGUMENT naming `path`.field.
absl::Status ValidateJobText(const v1::JobSpec& job, const std::string& path);

// The offset of the first byte of `text` that does not begin a valid UTF-8 character, if any.
std::optional<std::size_t> FirstInvalidUtf8(std::string_view text);

// A file holding a secret (a token file): PERMISSION_DENIED when others may write it (they could
// swap the token); a warning on `warnings` when others may read it. OK when it cannot be
// stat()ed: reading it reports that.
absl::Status CheckSecretFileMode(const std::string& path, const std::string& what,
                                 std::ostream& warnings);

}  // namespace devtime::wire
