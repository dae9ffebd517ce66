// The page and the text summary of `devtimectl report --model M`: pure rendering of a
// ReportModel (report_model.h: plain values, no wire types), without any I/O, so tests
// render constructed data. The charts are drawn by report_chart.h.
//
// The page is self-contained (inline CSS and inline SVG; no scripts, fonts, images or URLs).
// It has a summary, the table of live (suspected, open, acknowledged) regressions, then per
// (workload, instance type) a history chart (noise band, detector threshold, environment
// changes, regressions marked), the top operators' history, the latest OK run's operators
// and layers against its baseline; then a section per regression and a table of each series'
// runs, which every run id, chart point and regression row links to (#run-ID,
// #regression-N). Times are auto-scaled (µs, ms, s) everywhere. Every text that came from the
// collector is escaped.
#pragma once

#include <string>

#include "services/ctl/report_model.h"

namespace devtime::ctl {

std::string RenderReportHtml(const ReportModel& report);
// A few lines per series and per live regression, for the terminal.
std::string RenderReportText(const ReportModel& report);

// `text` made safe inside HTML and SVG elements and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace devtime::ctl
