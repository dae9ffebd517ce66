// The pieces BuildRunSummary (run_summary_builder.h) uses so that the agent sends only what
// the wire contract accepts (proto/devtime/v1/run.proto, enforced by proto/wire/validation.h on
// both sides): what a profile holds beyond the contract is repaired, and every repair leaves a
// warning in the run, instead of the collector refusing the whole night's run.
//
//   text with control, C1 or bidi characters  escaped (\x1b, \u202e), so it reads as it is
//   an operator name over 2,048 bytes         cut, with a marker naming the cut name's hash
//   more operators than 20,000                the smallest summed into "(other operators)"
//   more steps than 10,000 (or than fit the   contiguous buckets: means per step over k
//     message)                                steps, exact totals, StepTotal.steps = k
//   step numbers repeated or past 2^31-1      renumbered 0..N-1 in window order
//
// Repairs are deterministic: the same profile gives the same names every night, so an
// operator's series goes on across runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agents/trace/model/summary.h"

namespace devtime::agent {

// The name of the row that sums the operators past the contract's count (or size) limit: the
// trace library's (it may sum them already, SummarizeOptions::max_op_rows).
using ::devtime::trace::kOtherOperatorsName;

// A text made fit for a wire field, and what was done to it.
struct FittedText {
  std::string text;
  bool escaped = false;  // held characters the contract forbids (or bytes that are not UTF-8)
  bool cut = false;      // was longer than the field's limit
};

// `text` with each forbidden character written as an escape ("\x1b" for a C0 or C1 control or
// DEL, "\u202e" for a bidi embedding, override or isolate, "\xff" for a byte that is not
// UTF-8), cut to `max_bytes` at a character boundary when longer, ending in a marker
// "…[cut from N bytes, #hhhhhhhh]" whose hash is of the whole original, so that two long names
// that share their first `max_bytes` stay two names.
FittedText FitText(std::string_view text, std::size_t max_bytes);

// The number of a window's profiler steps each entry of a run's `steps` covers: `windows`
// windows in at most `max_buckets` contiguous buckets of k = ceil(windows / max_buckets)
// windows each (the last may hold fewer). k is 1 when the windows fit.
class StepBuckets {
 public:
  StepBuckets(std::size_t windows, std::size_t max_buckets);

  std::size_t count() const { return count_; }
  std::size_t steps_per_bucket() const { return k_; }
  bool bucketed() const { return k_ > 1; }
  std::size_t BucketOf(std::size_t window) const { return window / k_; }
  std::size_t First(std::size_t bucket) const { return bucket * k_; }
  // The windows bucket `bucket` (< count()) holds.
  std::size_t Size(std::size_t bucket) const;

 private:
  std::size_t windows_;
  std::size_t k_;
  std::size_t count_;
};

// How the step numbers of a run's windows are sent: as they are when they are unique and fit
// a PostgreSQL integer, else renumbered 0..N-1 in window order, with why.
struct StepNumbers {
  std::vector<uint32_t> numbers;
  std::string renumbered_because;  // "" when kept
};
StepNumbers FitStepNumbers(const std::vector<uint32_t>& numbers);

}  // namespace devtime::agent
