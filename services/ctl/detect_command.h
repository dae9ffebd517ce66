// `devtimectl detect [FILE|-]`: offline change-point analysis of one series with
// devtime::detect, no collector needed. Input: one number per line (`nan` = missing run,
// blank lines and lines starting with '#' ignored; an optional second number on a line is
// the run's within-run stddev). Output (text): the 0-based indices where a new segment starts
// (step findings), one per line and nothing else on stdout (nothing at all when there is no
// change), so scripts can read them; one human-readable line per drift finding,
// "# drift from START to END: +x % per 30 runs, ...", goes to stderr. `--format json` prints
// every finding with its kind ("step" in change_points, "drift" in drifts) and its statistics.
// Exit codes: 0 success, 2 bad usage or input (the message names the line).
#pragma once

#include <functional>
#include <iosfwd>
#include <limits>
#include <string>

#include "CLI/CLI.hpp"
#include "services/collector/detect/detect.h"

namespace devtime::ctl {

enum class DetectFormat { kText, kJson };

struct DetectCommandOptions {
  std::string input = "-";  // a file, or "-" for standard input
  detect::Mode mode = detect::Mode::kDefault;
  DetectFormat format = DetectFormat::kText;
  // NaN = the mode's default.
  double max_pvalue = std::numeric_limits<double>::quiet_NaN();
  double min_change = std::numeric_limits<double>::quiet_NaN();  // relative (0.02 = 2 %)
  detect::DetectorOptions detector;  // everything else (min_segment, window, ...)
};

// Analyses the series read from `in` and writes the result to `out`, messages to `err`.
int RunDetect(const DetectCommandOptions& options, std::istream& in, std::ostream& out,
              std::ostream& err);
// Opens options.input ("-" = std::cin) and calls RunDetect.
int RunDetectInput(const DetectCommandOptions& options, std::ostream& out, std::ostream& err);

// Registers the `detect` subcommand and its options on `app`. When the subcommand is parsed:
// with `run` == nullptr it runs at once and ends parsing with CLI::RuntimeError(exit code),
// which CLI11_PARSE turns into main's return value (so main needs only this one call);
// otherwise it stores the command in *run for the caller to invoke.
void AddDetectCommand(CLI::App& app, std::function<int()>* run = nullptr);

}  // namespace devtime::ctl
