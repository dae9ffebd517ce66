// The charts of one series on the report page, as inline SVG, and the few drawing and
// formatting helpers the rest of the page shares.
//
// The history chart: a line of time per step through the OK runs, failed and invalid runs as
// crosses on the axis; behind it the noise band (each run's mean ± the stddev of its steps,
// or, when no run has per-step times, ± the stddev of the OK runs' values, as the legend then
// says) and the detector's threshold (dashed: the baseline run's value × (1 ± threshold));
// a dashed line and ring at the first bad run of each regression, in the colour of its state;
// a dotted line at each run whose environment differs from the run before it, labelled
// "neuronx-cc 2.21.18 → 2.22.4". The y axis spans the data (with a margin), so that a 1 %
// threshold is visible; points and markers link to their runs' and regressions' sections.
//
// The operator history chart: the per-step time of the series' top operators over the runs
// whose summaries the report fetched, one coloured line each.
#pragma once

#include <string>
#include <vector>

#include "proto/wire/change.h"
#include "services/ctl/report_model.h"

namespace devtime::ctl {

inline constexpr const char* kLineColor = "#2563eb";  // OK runs: the line and latest bars
inline constexpr const char* kBandColor = "#bfdbfe";  // the noise band
inline constexpr const char* kThresholdColor = "#ea580c";
inline constexpr const char* kEnvColor = "#0d9488";  // environment change markers

// A regression's colour by its state name; grey for an unknown one.
const char* StateColor(const std::string& state);

// UTC calendar text of `seconds` since the epoch, strftime `format`.
std::string Utc(double seconds, const char* format);

// Times as every devtime table writes them: "375.5 µs", "2.355 ms", "1.017 s".
using wire::ScaledTime;
using wire::SignedTime;

// A label on a time axis, at `seconds` since the epoch.
struct TimeTick {
  double seconds;
  std::string label;
};

// The ticks of a time axis over [t0, t1]: fewer than 7, at whole hours (1, 2, 3, 6, 12) or
// whole days, UTC. A tick at midnight is labelled with its date ("2026-11-25"), any other
// with its date and time ("11-25 06:00"), so no label names a day it is not the start of.
std::vector<TimeTick> TimeTicks(double t0, double t1);

// "workload" or "workload · instance type".
std::string SeriesName(const ReportSeries& s);

// Whether `r` is a regression of the series `s`.
bool InSeries(const ReportRegression& r, const ReportSeries& s);

// The ids of the sections about a run and a regression, and links to them.
std::string RunAnchor(const std::string& run_id);
std::string RegressionAnchor(int64_t id);
std::string RunLink(const std::string& run_id);  // <a href="#run-…"><code>…</code></a>

// The history chart (and its legend) as HTML, or a note when the series has no runs.
// `threshold`: the detector's smallest relative change.
std::string HistoryChart(const ReportSeries& s, const std::vector<ReportRegression>& regressions,
                         double threshold);

// The operator history chart and its legend, or a note when no run summary was fetched.
std::string OpHistoryChart(const ReportSeries& s);

}  // namespace devtime::ctl
