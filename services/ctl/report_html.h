// The page and the text summary of `devtimectl report --model M`: pure rendering of what
// report.h gathered from the collector, without any I/O, so tests render constructed data.
//
// The page is self-contained (inline CSS and inline SVG; no scripts, fonts, images or URLs)
// and has four parts: per (workload, instance type) a line chart of time per step with the
// first bad run of each regression marked, the latest OK run's operators against its
// baseline, and its layers; then the table of live (suspected, open, acknowledged)
// regressions. Every text that came from the collector is escaped.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "devtime/v1/collector.pb.h"
#include "devtime/v1/regressions.pb.h"

namespace devtime::ctl {

// One (workload, instance type) of the model: a series of runs.
struct SeriesReport {
  std::string workload;
  std::string instance_type;
  std::vector<v1::RunInfo> runs;           // every listed run, any status, oldest first
  std::optional<v1::RunSummary> latest;    // the newest OK run
  std::optional<v1::RunSummary> baseline;  // what `latest` is compared with, if any
  std::string baseline_label;              // why that run: "last good run of regression 3", ...
};

struct ModelReport {
  std::string model;
  google::protobuf::Timestamp generated_at;
  std::vector<SeriesReport> series;         // by workload, then instance type
  std::vector<v1::Regression> regressions;  // of this model, any state, newest first
  std::string regressions_note;             // why regressions may be missing; "" = complete
};

// Suspected, open and acknowledged: the regressions the report's table lists.
bool IsLive(v1::RegressionState state);

std::string RenderReportHtml(const ModelReport& report);
// A few lines per series and per live regression, for the terminal.
std::string RenderReportText(const ModelReport& report);

// `text` made safe inside HTML and SVG elements and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace devtime::ctl
