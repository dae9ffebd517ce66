// What `devtimectl check --format markdown|junit` prints: the verdict and the significant
// operator changes, as a GitHub-flavoured Markdown comment for a pull request or as a JUnit
// XML report for a CI system's test view; and, when no verdict could be reached (the
// collector unreachable, a run not found, runs of different series), a well-formed "could
// not check" comment or report instead, so that a CI step never posts an empty comment or
// an invalid XML file. Pure functions of the check's inputs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "services/ctl/run_diff.h"

namespace devtime::ctl {

enum class CheckFormat { kText, kMarkdown, kJunit };

struct CheckVerdict {
  // The judged run's series (run_diff.h SeriesText): what JUnit names its tests by, so that
  // a CI system's test history follows one workload from run to run.
  std::string series;    // "rmsnorm/fused trn1.2xlarge neuron"
  std::string run;       // "rmsnorm/fused trn1.2xlarge neuron 2026-11-25T02:00:00Z (b87ae65c)"
  std::string baseline;  // the same for the baseline
  std::string run_id;    // whole run ids, for the JUnit report's properties
  std::string baseline_id;
  // The parts of the series identity the comparison crossed because --allow-different
  // named them (empty: both runs are of one series).
  std::vector<IdentityDifference> crossed;
  RunDiff diff;
  CheckOptions options;
  bool regression = false;
};

// Why a check gave no verdict.
struct CheckFailure {
  std::string run_ref;  // --run and --against as given
  std::string baseline_ref;
  std::string series;  // the run's series when it was found, else ""
  std::string basis;   // "device" or "self CPU" when the run was found, else ""
  int exit_code = 1;   // what devtimectl exits with (proto/wire/exit_codes.h)
  std::string reason;  // the error as devtimectl printed it
};

// The operators whose change matters: added or removed ones, and those whose per-step time
// moved by at least min_change of the baseline run's whole time per step; at most `max_ops`,
// largest change first.
std::vector<OpDelta> SignificantOps(const CheckVerdict& verdict, std::size_t max_ops);

std::string RenderCheckMarkdown(const CheckVerdict& verdict, std::size_t max_ops = 10);

// One test case for the run's time per step (a failure when it regressed) and one per
// significant operator change (a failure when the run regressed and that operator got
// slower). Tests are named by the run's series ("rmsnorm/fused trn1.2xlarge neuron: device
// time per step"); the run ids and start times are the suite's properties.
std::string RenderCheckJunit(const CheckVerdict& verdict, std::size_t max_ops = 10);

// "could not check": the reason and the exit code, as a comment or as a report whose one
// test case (named as RenderCheckJunit names the run's, when the run is known) is an error.
std::string RenderCheckFailureMarkdown(const CheckFailure& failure);
std::string RenderCheckFailureJunit(const CheckFailure& failure);

}  // namespace devtime::ctl
