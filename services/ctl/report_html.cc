#include "services/ctl/report_html.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "services/ctl/report_chart.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

constexpr std::size_t kMaxOpRows = 15;  // the rest of the operators share one "other" row
constexpr const char* kBaselineColor = "#cbd5e1";

// ---- small formatting helpers ---------------------------------------------------------------

std::string Day(const ReportTime& t) { return Utc(t.seconds, "%Y-%m-%d"); }

std::string StateBadge(const std::string& state) {
  return absl::StrFormat("<span class=\"badge\" style=\"background:%s\">%s</span>",
                         StateColor(state), HtmlEscape(state));
}

// The operator that grew most (the attribution lists the largest |delta| first), as HTML:
// the name may break anywhere (kernel names are long), its "+1.159 ms" never.
std::string TopOp(const ReportRegression& r) {
  for (const auto& op : r.ops) {
    if (op.delta_us > 0) {
      return HtmlEscape(op.op) + " <span class=\"nowrap\">" + SignedTime(op.delta_us) + "</span>";
    }
  }
  return "–";
}

// ---- the operator breakdown -----------------------------------------------------------------

// The operators by their larger per-step time, the tail folded into one "other" row.
std::vector<ReportOp> OpRows(const ReportBreakdown& b) {
  std::vector<ReportOp> rows = b.ops;
  std::stable_sort(rows.begin(), rows.end(), [](const ReportOp& x, const ReportOp& y) {
    return std::max(x.baseline_us, x.latest_us) > std::max(y.baseline_us, y.latest_us);
  });
  if (rows.size() > kMaxOpRows + 1) {
    ReportOp other{absl::StrFormat("other (%d operators)", rows.size() - kMaxOpRows)};
    for (auto it = rows.begin() + kMaxOpRows; it != rows.end(); ++it) {
      other.baseline_us += it->baseline_us;
      other.latest_us += it->latest_us;
    }
    rows.resize(kMaxOpRows);
    rows.push_back(other);
  }
  return rows;
}

// Two horizontal bars: the baseline (grey, thin) above the latest run (blue).
std::string OpBars(const ReportOp& row, double scale, bool has_baseline) {
  const double width = 300;
  std::string svg = absl::StrFormat(
      "<svg class=\"bars\" viewBox=\"0 0 %.0f 24\" width=\"%.0f\" height=\"24\">", width, width);
  if (has_baseline) {
    absl::StrAppendFormat(&svg, "<rect x=\"0\" y=\"2\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>",
                          row.baseline_us / scale * width, kBaselineColor);
  }
  absl::StrAppendFormat(&svg, "<rect x=\"0\" y=\"12\" width=\"%.1f\" height=\"10\" fill=\"%s\"/>",
                        row.latest_us / scale * width, kLineColor);
  return svg + "</svg>";
}

std::string DeltaCells(double before, double after, bool has_baseline) {
  if (!has_baseline) return "<td class=\"num\">–</td><td class=\"num\">–</td>";
  double delta = after - before;
  const char* tone = delta > 0 ? "worse" : delta < 0 ? "better" : "";
  const wire::Change change = wire::ChangeOf(before, after);
  std::string percent =
      change.defined ? wire::FormatFraction(change.fraction) : (after > 0 ? "new" : "–");
  return absl::StrFormat("<td class=\"num %s\">%s</td><td class=\"num %s\">%s</td>", tone,
                         SignedTime(delta), tone, percent);
}

std::string RunLine(const char* role, const ReportRunRef& run, const std::string& note) {
  return absl::StrFormat("<li>%s: run %s, started %s%s</li>", role, RunLink(run.run_id),
                         HtmlEscape(run.started_at.text),
                         note.empty() ? "" : " (" + HtmlEscape(note) + ")");
}

std::string OpSection(const ReportSeries& s) {
  if (!s.breakdown) return "<p class=\"muted\">No OK run to break down.</p>";
  const ReportBreakdown& b = *s.breakdown;
  bool has_baseline = b.baseline.has_value();
  std::vector<ReportOp> rows = OpRows(b);
  double scale = 0;
  for (const auto& row : rows) scale = std::max({scale, row.baseline_us, row.latest_us});
  if (scale <= 0) scale = 1;
  std::string html = "<ul class=\"runs\">" + RunLine("latest", b.latest, "");
  html += has_baseline ? RunLine("baseline", *b.baseline, b.baseline_label)
                       : "<li>baseline: none (no earlier OK run)</li>";
  absl::StrAppendFormat(&html,
                        "</ul><table class=\"ops\"><thead><tr><th>operator</th><th>"
                        "<span class=\"key base\"></span>baseline <span class=\"key latest\">"
                        "</span>latest</th><th>baseline / step</th><th>latest / step</th>"
                        "<th>Δ / step</th><th>Δ %%</th></tr></thead><tbody>");
  for (const auto& row : rows) {
    absl::StrAppendFormat(&html,
                          "<tr><td class=\"op\">%s</td><td>%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td>%s</tr>",
                          HtmlEscape(row.name), OpBars(row, scale, has_baseline),
                          has_baseline && row.in_baseline ? ScaledTime(row.baseline_us) : "–",
                          row.in_latest ? ScaledTime(row.latest_us) : "–",
                          DeltaCells(row.baseline_us, row.latest_us, has_baseline));
  }
  absl::StrAppendFormat(&html,
                        "</tbody><tfoot><tr><td>whole run (%s)</td><td></td><td class=\"num\">%s"
                        "</td><td class=\"num\">%s</td>%s</tr></tfoot></table>",
                        HtmlEscape(b.basis), has_baseline ? ScaledTime(b.baseline_us) : "–",
                        ScaledTime(b.latest_us),
                        DeltaCells(b.baseline_us, b.latest_us, has_baseline));
  return html;
}

// ---- the layer breakdown --------------------------------------------------------------------

struct LayerStyle {
  double ReportLayers::*time;
  const char* name;
  const char* color;
};

constexpr LayerStyle kLayers[] = {
    {&ReportLayers::framework_dispatch, "framework dispatch", "#f59e0b"},
    {&ReportLayers::runtime_scheduling, "runtime scheduling", "#8b5cf6"},
    {&ReportLayers::device_execution, "device execution", "#2563eb"},
    {&ReportLayers::idle, "idle", "#9ca3af"},
};

double LayerTotal(const ReportLayers& layers) {
  double total = 0;
  for (const auto& style : kLayers) total += layers.*style.time;
  return total;
}

std::string StackedBar(const char* label, const ReportLayers& layers, double y, double scale) {
  const double left = 90, width = 760;
  std::string svg =
      absl::StrFormat("<text class=\"tick\" x=\"0\" y=\"%.1f\">%s</text>", y + 15, label);
  double x = left;
  for (const auto& style : kLayers) {
    double w = layers.*style.time / scale * width;
    if (w <= 0) continue;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\" fill=\"%s\">"
                          "<title>%s: %s per step</title></rect>",
                          x, y, w, style.color, style.name, ScaledTime(layers.*style.time));
    x += w;
  }
  return svg;
}

std::string LayerSection(const ReportSeries& s) {
  if (!s.breakdown) return "";
  const ReportBreakdown& b = *s.breakdown;
  if (!b.latest_layers) {
    return "<p class=\"muted\">The latest run reported no layer times.</p>";
  }
  bool has_baseline = b.baseline_layers.has_value();
  double scale = LayerTotal(*b.latest_layers);
  if (has_baseline) scale = std::max(scale, LayerTotal(*b.baseline_layers));
  if (scale <= 0) scale = 1;
  int rows = has_baseline ? 2 : 1;
  std::string svg =
      absl::StrFormat("<svg class=\"layers\" viewBox=\"0 0 860 %d\" width=\"860\" height=\"%d\">",
                      rows * 28, rows * 28);
  double y = 2;
  if (has_baseline) {
    svg += StackedBar("baseline", *b.baseline_layers, y, scale);
    y += 28;
  }
  svg += StackedBar("latest", *b.latest_layers, y, scale) + "</svg>";
  std::string table =
      "<table class=\"layer-table\"><thead><tr><th>layer</th><th>baseline / step</th>"
      "<th>latest / step</th><th>Δ / step</th><th>Δ %</th></tr></thead><tbody>";
  for (const auto& style : kLayers) {
    double before = has_baseline ? (*b.baseline_layers).*style.time : 0;
    double after = (*b.latest_layers).*style.time;
    if (before == 0 && after == 0) continue;
    absl::StrAppendFormat(&table,
                          "<tr><td><span class=\"key\" style=\"background:%s\"></span>%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td>%s</tr>",
                          style.color, style.name, has_baseline ? ScaledTime(before) : "–",
                          ScaledTime(after), DeltaCells(before, after, has_baseline));
  }
  return svg + table + "</tbody></table>";
}

// ---- page sections --------------------------------------------------------------------------

int LiveCount(const std::vector<ReportRegression>& regressions, const ReportSeries* s) {
  int count = 0;
  for (const auto& r : regressions) count += r.live && (!s || InSeries(r, *s));
  return count;
}

// The latest OK run's time per step as the collector computed it (the series value).
std::string LatestPerStep(const ReportSeries& s, const char* none, const char* micro) {
  if (!s.breakdown) return none;
  for (const auto& run : s.runs) {
    if (run.run_id == s.breakdown->latest.run_id) return ScaledTime(run.us_per_step, micro);
  }
  return none;
}

// The latest run's relative change against its baseline; `none` when there is no pair.
std::string VsBaseline(const ReportSeries& s, const char* none) {
  if (!s.breakdown || !s.breakdown->baseline) return none;
  return wire::FormatFraction(s.breakdown->relative_change);
}

// When the latest OK run started; `none` when there is none.
std::string LatestStart(const ReportSeries& s, const char* none) {
  return s.breakdown ? s.breakdown->latest.started_at.text : none;
}

std::string OkRuns(const ReportSeries& s) {
  int ok = 0;
  for (const auto& run : s.runs) ok += run.ok;
  return absl::StrFormat("%d / %d", ok, s.runs.size());
}

std::string SummaryTable(const ReportModel& report) {
  std::string html =
      "<table><thead><tr><th>workload</th><th>instance type</th><th>latest OK run</th>"
      "<th>per step</th><th>vs baseline</th><th>OK / all runs</th><th>live regressions</th>"
      "</tr></thead><tbody>";
  for (std::size_t i = 0; i < report.series.size(); ++i) {
    const ReportSeries& s = report.series[i];
    absl::StrAppendFormat(
        &html,
        "<tr><td><a href=\"#series-%d\">%s</a></td><td>%s</td><td>%s</td>"
        "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
        "<td class=\"num\">%s</td><td class=\"num\">%d</td></tr>",
        i, HtmlEscape(s.workload), HtmlEscape(s.instance_type.empty() ? "–" : s.instance_type),
        s.breakdown ? RunLink(s.breakdown->latest.run_id) + " " + HtmlEscape(LatestStart(s, ""))
                    : "–",
        LatestPerStep(s, "–", "µs"), VsBaseline(s, "–"), OkRuns(s),
        LiveCount(report.regressions, &s));
  }
  return html + "</tbody></table>";
}

std::string EnvironmentChanges(const std::vector<ReportEnvChange>& changes) {
  std::string html;
  for (const auto& change : changes) {
    absl::StrAppendFormat(&html, "%s<code>%s</code> %s → %s", html.empty() ? "" : "<br>",
                          HtmlEscape(change.key),
                          HtmlEscape(change.before.empty() ? "(none)" : change.before),
                          HtmlEscape(change.after.empty() ? "(none)" : change.after));
  }
  return html.empty() ? "–" : html;
}

std::string WorkloadName(const ReportRegression& r) {
  return r.instance_type.empty() ? r.workload : r.workload + " · " + r.instance_type;
}

std::string Change(const ReportRegression& r) {
  return r.drift_rate.empty() ? wire::FormatFraction(r.relative_change) : HtmlEscape(r.drift_rate);
}

std::string RegressionsTable(const ReportModel& report) {
  std::string html;
  if (!report.regressions_note.empty()) {
    html += "<p class=\"note\">" + HtmlEscape(report.regressions_note) + "</p>";
  }
  if (LiveCount(report.regressions, nullptr) == 0) {
    return html + "<p class=\"muted\">No suspected, open or acknowledged regressions.</p>";
  }
  html +=
      "<table class=\"regressions\"><thead><tr><th>id</th><th>state</th><th>severity</th>"
      "<th>kind</th><th>workload</th><th>change</th><th>top operator</th><th>environment "
      "changes</th>"
      "<th>first bad run</th></tr></thead><tbody>";
  for (const auto& r : report.regressions) {
    if (!r.live) continue;
    absl::StrAppendFormat(
        &html,
        "<tr title=\"%s\"><td class=\"num\"><a href=\"#%s\">%d</a></td><td>%s</td><td>%s</td>"
        "<td>%s</td><td>%s</td><td class=\"num worse\">%s</td><td class=\"op\">%s</td>"
        "<td>%s</td><td>%s<br><span class=\"muted\">%s</span></td></tr>",
        HtmlEscape(r.summary), RegressionAnchor(r.id), r.id, StateBadge(r.state),
        HtmlEscape(r.severity), HtmlEscape(r.kind), HtmlEscape(WorkloadName(r)), Change(r),
        TopOp(r), EnvironmentChanges(r.environment), RunLink(r.first_bad_run_id),
        HtmlEscape(r.first_bad_at.text));
  }
  return html + "</tbody></table>";
}

// A trace file as a link, named by its file name. Only file:// URIs are links: an uploaded
// URI is data (never a javascript: link), and the page stays free of remote addresses.
std::string TraceFileLink(const std::string& uri) {
  const std::string name = uri.substr(uri.find_last_of('/') + 1);
  if (uri.rfind("file://", 0) != 0) return "<code>" + HtmlEscape(uri) + "</code>";
  return absl::StrFormat("<a href=\"%s\" title=\"%s\">%s</a>", HtmlEscape(uri), HtmlEscape(uri),
                         HtmlEscape(name.empty() ? uri : name));
}

// Where the regression's two runs keep their trace files, and the commands that open them.
std::string TracesList(const ReportRegression& r) {
  if (r.traces.empty()) return "";
  std::string items;
  for (const ReportTraces& t : r.traces) {
    std::string files;
    for (const std::string& uri : t.uris) files += " " + TraceFileLink(uri);
    std::string openings;
    for (const std::string& line : t.openings)
      openings += "<br><code>" + HtmlEscape(line) + "</code>";
    absl::StrAppendFormat(&items, "<li>%s %s:%s%s</li>", HtmlEscape(t.label), RunLink(t.run_id),
                          files, openings);
  }
  return "<p>Trace files</p><ul class=\"runs traces\">" + items + "</ul>";
}

// The section a regression's marker and table row link to: what the collector said of it.
std::string RegressionSection(const ReportRegression& r) {
  std::string ops;
  for (const auto& op : r.ops) {
    absl::StrAppendFormat(&ops, "<tr><td class=\"op\">%s</td><td class=\"num\">%s</td></tr>",
                          HtmlEscape(op.op), SignedTime(op.delta_us));
  }
  return absl::StrFormat(
      "<section class=\"regression-detail\" id=\"%s\"><h3>Regression %d %s · %s</h3>"
      "<p>%s</p><ul class=\"runs\"><li>%s %s, change %s</li><li>first bad run %s, started %s"
      "</li><li>environment: %s</li></ul>%s%s</section>",
      RegressionAnchor(r.id), r.id, StateBadge(r.state), HtmlEscape(WorkloadName(r)),
      HtmlEscape(r.summary), HtmlEscape(r.severity), HtmlEscape(r.kind), Change(r),
      RunLink(r.first_bad_run_id), HtmlEscape(r.first_bad_at.text),
      EnvironmentChanges(r.environment), TracesList(r),
      ops.empty() ? ""
                  : "<table><thead><tr><th>operator</th><th>Δ / step</th></tr></thead><tbody>" +
                        ops + "</tbody></table>");
}

// The runs of a series, newest first, each row the section its links lead to.
std::string RunsTable(const ReportModel& report, const ReportSeries& s) {
  std::string html = absl::StrFormat(
      "<h3>%s</h3><table class=\"run-table\"><thead><tr><th>run</th><th>started</th>"
      "<th>status</th><th>per step</th><th>± steps' stddev</th><th>environment change</th>"
      "<th>regressions from here</th></tr></thead><tbody>",
      HtmlEscape(SeriesName(s)));
  for (auto run = s.runs.rbegin(); run != s.runs.rend(); ++run) {
    std::string env = "";
    for (const auto& marker : s.env_changes) {
      if (marker.run_id == run->run_id) env = EnvironmentChanges(marker.changes);
    }
    std::string regressions;
    for (const auto& r : report.regressions) {
      if (InSeries(r, s) && r.first_bad_run_id == run->run_id) {
        absl::StrAppendFormat(&regressions, "<a href=\"#%s\">#%d</a> ", RegressionAnchor(r.id),
                              r.id);
      }
    }
    absl::StrAppendFormat(
        &html,
        "<tr id=\"%s\"><td><code>%s</code></td><td>%s</td><td>%s</td><td class=\"num\">%s</td>"
        "<td class=\"num\">%s</td><td>%s</td><td>%s</td></tr>",
        HtmlEscape(RunAnchor(run->run_id)), HtmlEscape(run->run_id),
        HtmlEscape(run->started_at.text),
        HtmlEscape(run->ok ? run->status : run->status + ": " + run->status_reason),
        run->ok ? ScaledTime(run->us_per_step) : "–",
        run->noise_us ? ScaledTime(*run->noise_us) : "–", env, regressions);
  }
  return html + "</tbody></table>";
}

std::string SeriesSection(const ReportModel& report, const ReportSeries& s, std::size_t index) {
  return absl::StrFormat(
      "<section id=\"series-%d\"><h2>%s</h2><h3>%s time per step</h3>%s"
      "<h3>Top operators over the newest %d OK runs</h3>%s"
      "<h3>Operators: latest run against its baseline</h3>%s<h3>Layers</h3>%s</section>",
      index, HtmlEscape(SeriesName(s)), HtmlEscape(s.basis),
      HistoryChart(s, report.regressions, report.threshold), s.fetched_runs, OpHistoryChart(s),
      OpSection(s), LayerSection(s));
}

constexpr const char* kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #111827; background: #ffffff; margin: 24px auto; max-width: 960px; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 36px;
     border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; } h3 { font-size: 15px; color: #374151; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.op { font-family: ui-monospace, "DejaVu Sans Mono", monospace; word-break: break-all; }
.nowrap { white-space: nowrap; word-break: normal; }
td.worse { color: #b91c1c; } td.better { color: #15803d; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.muted { color: #6b7280; } .note { background: #fef3c7; padding: 6px 10px; border-radius: 4px; }
.badge { color: #fff; border-radius: 3px; padding: 1px 6px; font-size: 12px; }
.legend { font-size: 12px; color: #4b5563; margin-top: 0; } .bad-key { color: #9ca3af; }
.key { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 8px; }
.key.base { background: #cbd5e1; } .key.latest { background: #2563eb; }
svg text { font-family: inherit; } .tick { font-size: 11px; fill: #4b5563; }
.axis { font-size: 12px; fill: #374151; } .marker { font-size: 11px; font-weight: 600; }
.grid { stroke: #e5e7eb; stroke-width: 1; } .bad { stroke: #9ca3af; stroke-width: 2; }
ul.runs { font-size: 13px; padding-left: 18px; }
.halo { paint-order: stroke; stroke: #ffffff; stroke-width: 3px; }
a { color: #1d4ed8; text-decoration: none; } a:hover { text-decoration: underline; }
tr:target, section:target h3 { background: #fef9c3; }
)css";

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderReportHtml(const ReportModel& report) {
  std::size_t runs = 0;
  for (const auto& s : report.series) runs += s.runs.size();
  std::string html = absl::StrFormat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>devtime report: %s</title><style>%s</style></head><body>"
      "<h1>devtime report: %s</h1><p class=\"muted\">generated %s · %d runs in %d series · "
      "times are per profiled step</p>",
      HtmlEscape(report.model), kStyle, HtmlEscape(report.model),
      HtmlEscape(report.generated_at.text), runs, report.series.size());
  html += "<h2>Summary</h2>" + SummaryTable(report);
  html += "<h2>Suspected, open and acknowledged regressions</h2>" + RegressionsTable(report);
  for (std::size_t i = 0; i < report.series.size(); ++i) {
    html += SeriesSection(report, report.series[i], i);
  }
  if (!report.regressions.empty()) {
    html += "<h2 id=\"regressions\">Regressions</h2>";
    for (const auto& r : report.regressions) html += RegressionSection(r);
  }
  html += "<h2 id=\"runs\">Runs</h2>";
  for (const auto& s : report.series) html += RunsTable(report, s);
  return html + "</body></html>\n";
}

std::string RenderReportText(const ReportModel& report) {
  using Align = TextTable::Align;
  std::size_t runs = 0;
  for (const auto& s : report.series) runs += s.runs.size();
  int live_count = LiveCount(report.regressions, nullptr);
  std::string out =
      absl::StrFormat("model %s: %d runs in %d series, %d live regression%s\n", report.model, runs,
                      report.series.size(), live_count, live_count == 1 ? "" : "s");
  TextTable series({"workload", "instance", "time", "latest OK run (UTC)", "per step",
                    "vs baseline", "baseline"},
                   {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight,
                    Align::kRight, Align::kLeft});
  for (const auto& s : report.series) {
    series.AddRow({s.workload, s.instance_type.empty() ? "-" : s.instance_type, s.basis,
                   LatestStart(s, "-"), LatestPerStep(s, "-", "µs"), VsBaseline(s, "-"),
                   s.breakdown && s.breakdown->baseline ? s.breakdown->baseline_label : "-"});
  }
  out += "\n" + series.Render();
  if (!report.regressions_note.empty()) out += "\n" + report.regressions_note + "\n";
  TextTable live(
      {"id", "state", "severity", "workload", "change", "first bad run"},
      {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kLeft});
  for (const auto& r : report.regressions) {
    if (!r.live) continue;
    live.AddRow({std::to_string(r.id), r.state, r.severity, r.workload,
                 wire::FormatFraction(r.relative_change),
                 r.first_bad_run_id + " " + Day(r.first_bad_at)});
  }
  if (!live.empty()) out += "\n" + live.Render();
  return out;
}

}  // namespace devtime::ctl
