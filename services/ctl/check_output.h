// What `devtimectl check --format markdown|junit` prints: the verdict and the significant
// operator changes, as a GitHub-flavoured Markdown comment for a pull request or as a JUnit
// XML report for a CI system's test view. Pure functions of the check's inputs.
#pragma once

#include <cstddef>
#include <string>

#include "services/ctl/run_diff.h"

namespace devtime::ctl {

enum class CheckFormat { kText, kMarkdown, kJunit };

struct CheckVerdict {
  std::string run;       // "rmsnorm/fused 2026-11-25T02:00:00Z (b87ae65c)"
  std::string baseline;  // the same for the baseline
  RunDiff diff;
  CheckOptions options;
  bool regression = false;
};

// The operators whose change matters: added or removed ones, and those whose per-step time
// moved by at least min_change of the baseline run's whole time per step; at most `max_ops`,
// largest change first.
std::vector<OpDelta> SignificantOps(const CheckVerdict& verdict, std::size_t max_ops);

std::string RenderCheckMarkdown(const CheckVerdict& verdict, std::size_t max_ops = 10);

// One test case for the run's time per step (a failure when it regressed) and one per
// significant operator change (a failure when the run regressed and that operator got slower).
std::string RenderCheckJunit(const CheckVerdict& verdict, std::size_t max_ops = 10);

}  // namespace devtime::ctl
