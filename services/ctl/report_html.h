// The page and the text summary of `devtimectl report --model M`: pure rendering of a
// ReportModel (report_model.h: plain values, no wire types), without any I/O, so tests
// render constructed data. The history charts are drawn by report_chart.h.
//
// The page is self-contained (inline CSS and inline SVG; no scripts, fonts, images or URLs)
// and has four parts: per (workload, instance type) a line chart of time per step with the
// first bad run of each regression marked, the latest OK run's operators against its
// baseline, and its layers; then the table of live (suspected, open, acknowledged)
// regressions. Every text that came from the collector is escaped.
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
