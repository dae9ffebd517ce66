#include "services/ctl/report_html.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/str_format.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "services/ctl/run_diff.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

constexpr std::size_t kMaxOpRows = 15;  // the rest of the operators share one "other" row
constexpr int kChartWidth = 880;
constexpr int kChartHeight = 260;
constexpr const char* kLineColor = "#2563eb";
constexpr const char* kBaselineColor = "#cbd5e1";

// ---- small formatting helpers ---------------------------------------------------------------

std::string SignedPercent(double fraction) { return absl::StrFormat("%+.1f%%", 100 * fraction); }
std::string SignedMicros(double us) { return absl::StrFormat("%+.1f", us); }

double Seconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + t.nanos() / 1e9;
}

// UTC calendar text of `seconds` since the epoch.
std::string Utc(double seconds, const char* format) {
  std::time_t t = static_cast<std::time_t>(std::floor(seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[64];
  std::size_t n = std::strftime(buffer, sizeof buffer, format, &tm);
  return std::string(buffer, n);
}

std::string Day(const google::protobuf::Timestamp& t) { return Utc(Seconds(t), "%Y-%m-%d"); }

std::string SeriesName(const SeriesReport& s) {
  return s.instance_type.empty() ? s.workload : s.workload + " · " + s.instance_type;
}

bool IsCpu(const v1::RunIdentity& id) { return id.device_kind() == v1::DEVICE_KIND_CPU; }

// What the times of a series measure (the series basis, as the collector stores it).
std::string Basis(const SeriesReport& s) {
  if (s.latest) return IsCpu(s.latest->identity()) ? "self CPU" : "device";
  if (!s.runs.empty() && IsCpu(s.runs.back().identity())) return "self CPU";
  return "device";
}

const char* StateColor(v1::RegressionState state) {
  switch (state) {
    case v1::REGRESSION_STATE_SUSPECTED:
      return "#d97706";
    case v1::REGRESSION_STATE_OPEN:
      return "#dc2626";
    case v1::REGRESSION_STATE_ACKNOWLEDGED:
      return "#7c3aed";
    case v1::REGRESSION_STATE_RESOLVED:
      return "#16a34a";
    default:
      return "#6b7280";
  }
}

std::string StateBadge(v1::RegressionState state) {
  return absl::StrFormat("<span class=\"badge\" style=\"background:%s\">%s</span>",
                         StateColor(state), HtmlEscape(wire::RegressionStateName(state)));
}

bool InSeries(const v1::Regression& r, const SeriesReport& s) {
  return r.workload() == s.workload && r.instance_type() == s.instance_type;
}

// The operator that grew most (the attribution lists the largest |delta| first).
std::string TopOp(const v1::Regression& r) {
  for (const auto& op : r.attribution().ops()) {
    if (op.delta_us() > 0) return absl::StrFormat("%s %+.1f µs", op.op(), op.delta_us());
  }
  return "–";
}

// Steps a run's totals are spread over: as the collector's series points count them.
double Steps(const v1::RunSummary& run) {
  if (run.steps_size() > 0) return run.steps_size();
  if (run.capture().active_steps() > 0) return run.capture().active_steps();
  return 1;
}

// ---- the history chart ----------------------------------------------------------------------

// A round step (1, 2, 2.5 or 5 × 10^k) that cuts `range` into about `ticks` parts.
double NiceStep(double range, int ticks) {
  double raw = range / ticks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

// Data coordinates to pixels inside the plot area.
struct Frame {
  double t0, t1;  // seconds since the epoch
  double v1;      // the y axis runs from 0 to v1 (µs per step): time bars start at zero
  // The right margin leaves room for the last date label, centred on the plot's edge.
  double left = 70, top = 14, width = kChartWidth - 115, height = kChartHeight - 50;

  double X(double t) const { return left + (t - t0) / (t1 - t0) * width; }
  double Y(double v) const { return top + height - v / v1 * height; }
};

Frame ChartFrame(const SeriesReport& s) {
  Frame f{Seconds(s.runs.front().started_at()), Seconds(s.runs.back().started_at()), 0};
  if (f.t1 - f.t0 < 3600) {  // one run, or a burst: centre it in a day
    f.t0 -= 43200;
    f.t1 += 43200;
  }
  double top = 0;
  for (const auto& run : s.runs) {
    if (run.status() == v1::RUN_STATUS_OK) top = std::max(top, run.device_us_per_step());
  }
  if (top <= 0) top = 1;
  double step = NiceStep(top * 1.08, 5);
  f.v1 = std::ceil(top * 1.08 / step) * step;
  return f;
}

std::string Axes(const Frame& f, const std::string& basis) {
  std::string svg;
  double step = NiceStep(f.v1, 5);
  for (double v = 0; v <= f.v1 + step / 2; v += step) {
    absl::StrAppendFormat(
        &svg,
        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
        f.left, f.Y(v), f.left + f.width, f.Y(v), f.left - 6, f.Y(v) + 4, FormatMicros(v));
  }
  const int x_ticks = 6;
  const char* format = f.t1 - f.t0 > 4 * 86400 ? "%Y-%m-%d" : "%m-%d %H:%M";
  for (int i = 0; i <= x_ticks; ++i) {
    double t = f.t0 + (f.t1 - f.t0) * i / x_ticks;
    absl::StrAppendFormat(
        &svg, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", f.X(t),
        f.top + f.height + 18, Utc(t, format));
  }
  absl::StrAppendFormat(&svg,
                        "<text class=\"axis\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\""
                        " transform=\"rotate(-90 14 %.1f)\">%s µs / step</text>",
                        f.top + f.height / 2, f.top + f.height / 2, HtmlEscape(basis));
  return svg;
}

std::string RunPoints(const Frame& f, const SeriesReport& s) {
  std::string line, dots;
  for (const auto& run : s.runs) {
    double x = f.X(Seconds(run.started_at()));
    std::string when = wire::FormatTime(run.started_at());
    if (run.status() != v1::RUN_STATUS_OK) {  // history, never data: a cross on the axis
      double y = f.Y(0);
      absl::StrAppendFormat(
          &dots,
          "<path class=\"bad\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\"><title>%s %s: %s"
          "</title></path>",
          x - 4, y - 4, x + 4, y + 4, x - 4, y + 4, x + 4, y - 4, HtmlEscape(when),
          HtmlEscape(wire::RunStatusName(run.status())), HtmlEscape(run.status_reason()));
      continue;
    }
    double y = f.Y(run.device_us_per_step());
    absl::StrAppendFormat(&line, "%s%.1f,%.1f", line.empty() ? "" : " ", x, y);
    absl::StrAppendFormat(
        &dots,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s  %s µs/step"
        "  run %s</title></circle>",
        x, y, kLineColor, HtmlEscape(when), FormatMicros(run.device_us_per_step()),
        HtmlEscape(run.identity().run_id()));
  }
  std::string svg;
  if (!line.empty()) {
    absl::StrAppendFormat(
        &svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>",
        kLineColor, line);
  }
  return svg + dots;
}

// A dashed line and a ring at the first bad run of every regression of the series.
std::string RegressionMarkers(const Frame& f, const SeriesReport& s,
                              const std::vector<v1::Regression>& regressions) {
  std::string svg;
  for (const auto& r : regressions) {
    if (!InSeries(r, s)) continue;
    auto run = std::find_if(s.runs.begin(), s.runs.end(), [&](const v1::RunInfo& info) {
      return info.identity().run_id() == r.first_bad_run_id();
    });
    if (run == s.runs.end()) continue;  // older than the listed history
    double x = f.X(Seconds(run->started_at()));
    double y = f.Y(run->device_us_per_step());
    const char* color = StateColor(r.state());
    absl::StrAppendFormat(
        &svg,
        "<g class=\"regression\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\""
        " stroke=\"%s\" stroke-dasharray=\"4 3\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\""
        " fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\""
        " fill=\"%s\" class=\"marker\">#%d %s</text><title>regression %d (%s): %s</title></g>",
        x, f.top, x, f.top + f.height, color, x, y, color, x + 5, f.top + 10, color, r.id(),
        HtmlEscape(wire::RegressionStateName(r.state())), r.id(),
        HtmlEscape(wire::RegressionStateName(r.state())), HtmlEscape(r.summary()));
  }
  return svg;
}

std::string HistoryChart(const SeriesReport& s, const std::vector<v1::Regression>& regressions) {
  if (s.runs.empty()) return "<p class=\"muted\">No runs.</p>";
  Frame f = ChartFrame(s);
  std::string title = SeriesName(s) + ": " + Basis(s) + " time per step";
  return absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\""
      " aria-label=\"%s\">%s%s%s</svg>"
      "<p class=\"legend\"><span style=\"color:%s\">●</span> OK run &nbsp; "
      "<span class=\"bad-key\">×</span> failed or invalid run (not data) &nbsp; "
      "◯ first bad run of a regression, coloured by state</p>",
      kChartWidth, kChartHeight, kChartWidth, kChartHeight, HtmlEscape(title), Axes(f, Basis(s)),
      RunPoints(f, s), RegressionMarkers(f, s, regressions), kLineColor);
}

// ---- the operator breakdown -----------------------------------------------------------------

struct OpRow {
  std::string name;
  double before = 0, after = 0;
  bool in_baseline = true, in_latest = true;  // false: the operator is absent from that run
};

// The operators by their larger per-step time, the tail folded into one "other" row.
std::vector<OpRow> OpRows(const RunDiff& diff) {
  std::vector<OpRow> rows;
  for (const auto& op : diff.ops) {
    rows.push_back({op.name, op.before_us, op.after_us, op.kind != OpDelta::Kind::kAdded,
                    op.kind != OpDelta::Kind::kRemoved});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
    return std::max(a.before, a.after) > std::max(b.before, b.after);
  });
  if (rows.size() > kMaxOpRows + 1) {
    OpRow other{absl::StrFormat("other (%d operators)", rows.size() - kMaxOpRows)};
    for (auto it = rows.begin() + kMaxOpRows; it != rows.end(); ++it) {
      other.before += it->before;
      other.after += it->after;
    }
    rows.resize(kMaxOpRows);
    rows.push_back(other);
  }
  return rows;
}

// Two horizontal bars: the baseline (grey, thin) above the latest run (blue).
std::string OpBars(const OpRow& row, double scale, bool has_baseline) {
  const double width = 300;
  std::string svg = absl::StrFormat(
      "<svg class=\"bars\" viewBox=\"0 0 %.0f 24\" width=\"%.0f\" height=\"24\">", width, width);
  if (has_baseline) {
    absl::StrAppendFormat(&svg, "<rect x=\"0\" y=\"2\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>",
                          row.before / scale * width, kBaselineColor);
  }
  absl::StrAppendFormat(&svg, "<rect x=\"0\" y=\"12\" width=\"%.1f\" height=\"10\" fill=\"%s\"/>",
                        row.after / scale * width, kLineColor);
  return svg + "</svg>";
}

std::string DeltaCells(double before, double after, bool has_baseline) {
  if (!has_baseline) return "<td class=\"num\">–</td><td class=\"num\">–</td>";
  double delta = after - before;
  const char* tone = delta > 0 ? "worse" : delta < 0 ? "better" : "";
  std::string percent = before > 0 ? SignedPercent(delta / before) : (after > 0 ? "new" : "–");
  return absl::StrFormat("<td class=\"num %s\">%s</td><td class=\"num %s\">%s</td>", tone,
                         SignedMicros(delta), tone, percent);
}

std::string RunLine(const char* role, const v1::RunSummary& run, const std::string& note) {
  return absl::StrFormat("<li>%s: run <code>%s</code>, started %s%s</li>", role,
                         HtmlEscape(run.identity().run_id()),
                         HtmlEscape(wire::FormatTime(run.started_at())),
                         note.empty() ? "" : " (" + HtmlEscape(note) + ")");
}

std::string OpSection(const SeriesReport& s) {
  if (!s.latest) return "<p class=\"muted\">No OK run to break down.</p>";
  bool has_baseline = s.baseline.has_value();
  RunDiff diff = DiffRuns(has_baseline ? *s.baseline : *s.latest, *s.latest);
  std::vector<OpRow> rows = OpRows(diff);
  double scale = 0;
  for (const auto& row : rows) scale = std::max({scale, row.before, row.after});
  if (scale <= 0) scale = 1;
  std::string html = "<ul class=\"runs\">" + RunLine("latest", *s.latest, "");
  html += has_baseline ? RunLine("baseline", *s.baseline, s.baseline_label)
                       : "<li>baseline: none (no earlier OK run)</li>";
  absl::StrAppendFormat(&html,
                        "</ul><table class=\"ops\"><thead><tr><th>operator</th><th>"
                        "<span class=\"key base\"></span>baseline <span class=\"key latest\">"
                        "</span>latest</th><th>baseline µs/step</th><th>latest µs/step</th>"
                        "<th>Δ µs</th><th>Δ %%</th></tr></thead><tbody>");
  for (const auto& row : rows) {
    absl::StrAppendFormat(&html,
                          "<tr><td class=\"op\">%s</td><td>%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td>%s</tr>",
                          HtmlEscape(row.name), OpBars(row, scale, has_baseline),
                          has_baseline && row.in_baseline ? FormatMicros(row.before) : "–",
                          row.in_latest ? FormatMicros(row.after) : "–",
                          DeltaCells(row.before, row.after, has_baseline));
  }
  absl::StrAppendFormat(&html,
                        "</tbody><tfoot><tr><td>whole run (%s)</td><td></td><td class=\"num\">%s"
                        "</td><td class=\"num\">%s</td>%s</tr></tfoot></table>",
                        HtmlEscape(diff.basis), has_baseline ? FormatMicros(diff.before_us) : "–",
                        FormatMicros(diff.after_us),
                        DeltaCells(diff.before_us, diff.after_us, has_baseline));
  return html;
}

// ---- the layer breakdown --------------------------------------------------------------------

struct LayerStyle {
  v1::Layer layer;
  const char* name;
  const char* color;
};

constexpr LayerStyle kLayers[] = {
    {v1::LAYER_FRAMEWORK_DISPATCH, "framework dispatch", "#f59e0b"},
    {v1::LAYER_RUNTIME_SCHEDULING, "runtime scheduling", "#8b5cf6"},
    {v1::LAYER_DEVICE_EXECUTION, "device execution", "#2563eb"},
    {v1::LAYER_IDLE, "idle", "#9ca3af"},
};

// µs per step in `layer` (0 when the run did not report it).
double LayerPerStep(const v1::RunSummary& run, v1::Layer layer) {
  for (const auto& l : run.layers()) {
    if (l.layer() == layer) return l.time_us() / Steps(run);
  }
  return 0;
}

double LayerTotal(const v1::RunSummary& run) {
  double total = 0;
  for (const auto& style : kLayers) total += LayerPerStep(run, style.layer);
  return total;
}

std::string StackedBar(const char* label, const v1::RunSummary& run, double y, double scale) {
  const double left = 90, width = 760;
  std::string svg =
      absl::StrFormat("<text class=\"tick\" x=\"0\" y=\"%.1f\">%s</text>", y + 15, label);
  double x = left;
  for (const auto& style : kLayers) {
    double w = LayerPerStep(run, style.layer) / scale * width;
    if (w <= 0) continue;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\" fill=\"%s\">"
                          "<title>%s: %s µs/step</title></rect>",
                          x, y, w, style.color, style.name,
                          FormatMicros(LayerPerStep(run, style.layer)));
    x += w;
  }
  return svg;
}

std::string LayerSection(const SeriesReport& s) {
  if (!s.latest) return "";
  if (s.latest->layers().empty()) {
    return "<p class=\"muted\">The latest run reported no layer times.</p>";
  }
  bool has_baseline = s.baseline && !s.baseline->layers().empty();
  double scale = LayerTotal(*s.latest);
  if (has_baseline) scale = std::max(scale, LayerTotal(*s.baseline));
  if (scale <= 0) scale = 1;
  int rows = has_baseline ? 2 : 1;
  std::string svg =
      absl::StrFormat("<svg class=\"layers\" viewBox=\"0 0 860 %d\" width=\"860\" height=\"%d\">",
                      rows * 28, rows * 28);
  double y = 2;
  if (has_baseline) {
    svg += StackedBar("baseline", *s.baseline, y, scale);
    y += 28;
  }
  svg += StackedBar("latest", *s.latest, y, scale) + "</svg>";
  std::string table =
      "<table class=\"layer-table\"><thead><tr><th>layer</th><th>baseline µs/step</th>"
      "<th>latest µs/step</th><th>Δ µs</th><th>Δ %</th></tr></thead><tbody>";
  for (const auto& style : kLayers) {
    double before = has_baseline ? LayerPerStep(*s.baseline, style.layer) : 0;
    double after = LayerPerStep(*s.latest, style.layer);
    if (before == 0 && after == 0) continue;
    absl::StrAppendFormat(&table,
                          "<tr><td><span class=\"key\" style=\"background:%s\"></span>%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td>%s</tr>",
                          style.color, style.name, has_baseline ? FormatMicros(before) : "–",
                          FormatMicros(after), DeltaCells(before, after, has_baseline));
  }
  return svg + table + "</tbody></table>";
}

// ---- page sections --------------------------------------------------------------------------

int LiveCount(const std::vector<v1::Regression>& regressions, const SeriesReport* s) {
  int count = 0;
  for (const auto& r : regressions) count += IsLive(r.state()) && (!s || InSeries(r, *s));
  return count;
}

// The latest OK run's time per step as the collector computed it (the series value).
std::string LatestPerStep(const SeriesReport& s, const char* none) {
  if (!s.latest) return none;
  for (const auto& run : s.runs) {
    if (run.identity().run_id() == s.latest->identity().run_id()) {
      return FormatMicros(run.device_us_per_step());
    }
  }
  return none;
}

// The latest run's relative change against its baseline; `none` when there is no pair.
std::string VsBaseline(const SeriesReport& s, const char* none) {
  if (!s.latest || !s.baseline) return none;
  return SignedPercent(DiffRuns(*s.baseline, *s.latest).relative_change);
}

std::string OkRuns(const SeriesReport& s) {
  int ok = 0;
  for (const auto& run : s.runs) ok += run.status() == v1::RUN_STATUS_OK;
  return absl::StrFormat("%d / %d", ok, s.runs.size());
}

std::string SummaryTable(const ModelReport& report) {
  std::string html =
      "<table><thead><tr><th>workload</th><th>instance type</th><th>latest OK run</th>"
      "<th>µs/step</th><th>vs baseline</th><th>OK / all runs</th><th>live regressions</th>"
      "</tr></thead><tbody>";
  for (std::size_t i = 0; i < report.series.size(); ++i) {
    const SeriesReport& s = report.series[i];
    std::string latest = s.latest ? wire::FormatTime(s.latest->started_at()) : "–";
    absl::StrAppendFormat(&html,
                          "<tr><td><a href=\"#series-%d\">%s</a></td><td>%s</td><td>%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%d</td></tr>",
                          i, HtmlEscape(s.workload),
                          HtmlEscape(s.instance_type.empty() ? "–" : s.instance_type),
                          HtmlEscape(latest), LatestPerStep(s, "–"), VsBaseline(s, "–"), OkRuns(s),
                          LiveCount(report.regressions, &s));
  }
  return html + "</tbody></table>";
}

std::string EnvironmentChanges(const v1::Regression& r) {
  std::string html;
  for (const auto& change : r.attribution().environment()) {
    absl::StrAppendFormat(&html, "%s<code>%s</code> %s → %s", html.empty() ? "" : "<br>",
                          HtmlEscape(change.key()),
                          HtmlEscape(change.before().empty() ? "(none)" : change.before()),
                          HtmlEscape(change.after().empty() ? "(none)" : change.after()));
  }
  return html.empty() ? "–" : html;
}

std::string RegressionsTable(const ModelReport& report) {
  std::string html;
  if (!report.regressions_note.empty()) {
    html += "<p class=\"note\">" + HtmlEscape(report.regressions_note) + "</p>";
  }
  if (LiveCount(report.regressions, nullptr) == 0) {
    return html + "<p class=\"muted\">No suspected, open or acknowledged regressions.</p>";
  }
  html +=
      "<table class=\"regressions\"><thead><tr><th>id</th><th>state</th><th>severity</th>"
      "<th>workload</th><th>change</th><th>top operator</th><th>environment changes</th>"
      "<th>first bad run</th></tr></thead><tbody>";
  for (const auto& r : report.regressions) {
    if (!IsLive(r.state())) continue;
    std::string workload =
        r.instance_type().empty() ? r.workload() : r.workload() + " · " + r.instance_type();
    absl::StrAppendFormat(
        &html,
        "<tr title=\"%s\"><td class=\"num\">%d</td><td>%s</td><td>%s</td><td>%s</td>"
        "<td class=\"num worse\">%s</td><td class=\"op\">%s</td><td>%s</td>"
        "<td><code>%s</code><br><span class=\"muted\">%s</span></td></tr>",
        HtmlEscape(r.summary()), r.id(), StateBadge(r.state()), HtmlEscape(r.severity()),
        HtmlEscape(workload), SignedPercent(r.relative_change()), HtmlEscape(TopOp(r)),
        EnvironmentChanges(r), HtmlEscape(r.first_bad_run_id()),
        HtmlEscape(wire::FormatTime(r.first_bad_at())));
  }
  return html + "</tbody></table>";
}

std::string SeriesSection(const ModelReport& report, const SeriesReport& s, std::size_t index) {
  return absl::StrFormat(
      "<section id=\"series-%d\"><h2>%s</h2><h3>%s time per step</h3>%s"
      "<h3>Operators: latest run against its baseline</h3>%s<h3>Layers</h3>%s</section>",
      index, HtmlEscape(SeriesName(s)), HtmlEscape(Basis(s)), HistoryChart(s, report.regressions),
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
)css";

}  // namespace

bool IsLive(v1::RegressionState state) {
  return state == v1::REGRESSION_STATE_SUSPECTED || state == v1::REGRESSION_STATE_OPEN ||
         state == v1::REGRESSION_STATE_ACKNOWLEDGED;
}

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

std::string RenderReportHtml(const ModelReport& report) {
  std::size_t runs = 0;
  for (const auto& s : report.series) runs += s.runs.size();
  std::string html = absl::StrFormat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>devtime report: %s</title><style>%s</style></head><body>"
      "<h1>devtime report: %s</h1><p class=\"muted\">generated %s · %d runs in %d series · "
      "times are per profiled step</p>",
      HtmlEscape(report.model), kStyle, HtmlEscape(report.model),
      HtmlEscape(wire::FormatTime(report.generated_at)), runs, report.series.size());
  html += "<h2>Summary</h2>" + SummaryTable(report);
  html += "<h2>Suspected, open and acknowledged regressions</h2>" + RegressionsTable(report);
  for (std::size_t i = 0; i < report.series.size(); ++i) {
    html += SeriesSection(report, report.series[i], i);
  }
  return html + "</body></html>\n";
}

std::string RenderReportText(const ModelReport& report) {
  using Align = TextTable::Align;
  std::size_t runs = 0;
  for (const auto& s : report.series) runs += s.runs.size();
  int live_count = LiveCount(report.regressions, nullptr);
  std::string out =
      absl::StrFormat("model %s: %d runs in %d series, %d live regression%s\n", report.model, runs,
                      report.series.size(), live_count, live_count == 1 ? "" : "s");
  TextTable series(
      {"workload", "instance", "latest OK run (UTC)", "us/step", "vs baseline", "baseline"},
      {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kLeft});
  for (const auto& s : report.series) {
    series.AddRow({s.workload, s.instance_type.empty() ? "-" : s.instance_type,
                   s.latest ? wire::FormatTime(s.latest->started_at()) : "-", LatestPerStep(s, "-"),
                   VsBaseline(s, "-"), s.baseline ? s.baseline_label : "-"});
  }
  out += "\n" + series.Render();
  if (!report.regressions_note.empty()) out += "\n" + report.regressions_note + "\n";
  TextTable live(
      {"id", "state", "severity", "workload", "change", "first bad run"},
      {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kLeft});
  for (const auto& r : report.regressions) {
    if (!IsLive(r.state())) continue;
    live.AddRow({std::to_string(r.id()), wire::RegressionStateName(r.state()), r.severity(),
                 r.workload(), SignedPercent(r.relative_change()),
                 r.first_bad_run_id() + " " + Day(r.first_bad_at())});
  }
  if (!live.empty()) out += "\n" + live.Render();
  return out;
}

}  // namespace devtime::ctl
