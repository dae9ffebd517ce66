#include "services/ctl/report_monitor.h"

#include <cstdio>

#include "proto/wire/time.h"
#include "services/ctl/report_html.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

std::string Ms(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", us / 1000);
  return text;
}

std::vector<std::vector<std::string>> Rows(const std::vector<v1::RunInfo>& windows) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : windows) {
    const auto& m = w.monitor();
    uint64_t errors = 0;
    for (const auto& [kind, count] : m.errors()) errors += count;
    char util[16];
    std::snprintf(util, sizeof util, "%.0f %%", m.neuroncore_utilization_pct());
    rows.push_back({wire::FormatTime(m.window_start()), w.identity().workload(),
                    w.identity().host(), std::to_string(m.executions()), std::to_string(errors),
                    Ms(m.device_p50_us()), Ms(m.device_p99_us()), Ms(m.total_p99_us()), util});
  }
  return rows;
}

const std::vector<std::string> kColumns = {"window (UTC)", "workload",  "host",
                                           "executions",   "errors",    "device p50",
                                           "device p99",   "total p99", "util"};

}  // namespace

std::string RenderMonitorText(const std::vector<v1::RunInfo>& windows) {
  if (windows.empty()) return "";
  using Align = TextTable::Align;
  TextTable table(kColumns, {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight,
                             Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (auto& row : Rows(windows)) table.AddRow(std::move(row));
  return "\nbetween the nights (neuron-monitor windows, newest first)\n" + table.Render();
}

std::string RenderMonitorHtml(const std::vector<v1::RunInfo>& windows) {
  if (windows.empty()) return "";
  std::string html =
      "<h2 id=\"between-the-nights\">Between the nights</h2><p class=\"muted\">"
      "neuron-monitor windows, newest first</p><table><tr>";
  for (const auto& c : kColumns) html += "<th>" + HtmlEscape(c) + "</th>";
  html += "</tr>";
  for (const auto& row : Rows(windows)) {
    html += "<tr>";
    for (const auto& cell : row) html += "<td>" + HtmlEscape(cell) + "</td>";
    html += "</tr>";
  }
  return html + "</table>";
}

}  // namespace devtime::ctl
