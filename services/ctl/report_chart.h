// The history chart of one series on the report page: an inline SVG line of time per step
// through the OK runs (the y axis starts at zero), failed and invalid runs as crosses on the
// axis, and a dashed line and ring at the first bad run of each of the series' regressions,
// in the colour of its state. Also the few drawing helpers the rest of the page shares.
#pragma once

#include <string>
#include <vector>

#include "services/ctl/report_model.h"

namespace devtime::ctl {

inline constexpr const char* kLineColor = "#2563eb";  // OK runs: the line and latest bars

// A regression's colour by its state name; grey for an unknown one.
const char* StateColor(const std::string& state);

// UTC calendar text of `seconds` since the epoch, strftime `format`.
std::string Utc(double seconds, const char* format);

// "workload" or "workload · instance type".
std::string SeriesName(const ReportSeries& s);

// Whether `r` is a regression of the series `s`.
bool InSeries(const ReportRegression& r, const ReportSeries& s);

// The chart (and its legend) as HTML, or a note when the series has no runs.
std::string HistoryChart(const ReportSeries& s, const std::vector<ReportRegression>& regressions);

}  // namespace devtime::ctl
