#include "services/ctl/report_chart.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "absl/strings/str_format.h"
#include "services/ctl/report_html.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

constexpr int kChartWidth = 880;
constexpr int kChartHeight = 260;

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

Frame ChartFrame(const ReportSeries& s) {
  Frame f{s.runs.front().started_at.seconds, s.runs.back().started_at.seconds, 0};
  if (f.t1 - f.t0 < 3600) {  // one run, or a burst: centre it in a day
    f.t0 -= 43200;
    f.t1 += 43200;
  }
  double top = 0;
  for (const auto& run : s.runs) {
    if (run.ok) top = std::max(top, run.us_per_step);
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

std::string RunPoints(const Frame& f, const ReportSeries& s) {
  std::string line, dots;
  for (const auto& run : s.runs) {
    double x = f.X(run.started_at.seconds);
    const std::string& when = run.started_at.text;
    if (!run.ok) {  // history, never data: a cross on the axis
      double y = f.Y(0);
      absl::StrAppendFormat(
          &dots,
          "<path class=\"bad\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\"><title>%s %s: %s"
          "</title></path>",
          x - 4, y - 4, x + 4, y + 4, x - 4, y + 4, x + 4, y - 4, HtmlEscape(when),
          HtmlEscape(run.status), HtmlEscape(run.status_reason));
      continue;
    }
    double y = f.Y(run.us_per_step);
    absl::StrAppendFormat(&line, "%s%.1f,%.1f", line.empty() ? "" : " ", x, y);
    absl::StrAppendFormat(
        &dots,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s  %s µs/step"
        "  run %s</title></circle>",
        x, y, kLineColor, HtmlEscape(when), FormatMicros(run.us_per_step), HtmlEscape(run.run_id));
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
std::string RegressionMarkers(const Frame& f, const ReportSeries& s,
                              const std::vector<ReportRegression>& regressions) {
  std::string svg;
  for (const auto& r : regressions) {
    if (!InSeries(r, s)) continue;
    auto run = std::find_if(s.runs.begin(), s.runs.end(), [&](const ReportRun& listed) {
      return listed.run_id == r.first_bad_run_id;
    });
    if (run == s.runs.end()) continue;  // older than the listed history
    double x = f.X(run->started_at.seconds);
    double y = f.Y(run->us_per_step);
    const char* color = StateColor(r.state);
    absl::StrAppendFormat(
        &svg,
        "<g class=\"regression\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\""
        " stroke=\"%s\" stroke-dasharray=\"4 3\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\""
        " fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\""
        " fill=\"%s\" class=\"marker\">#%d %s</text><title>regression %d (%s): %s</title></g>",
        x, f.top, x, f.top + f.height, color, x, y, color, x + 5, f.top + 10, color, r.id,
        HtmlEscape(r.state), r.id, HtmlEscape(r.state), HtmlEscape(r.summary));
  }
  return svg;
}

}  // namespace

const char* StateColor(const std::string& state) {
  static const auto* const kColors = new std::map<std::string, const char*>{
      {"suspected", "#d97706"},
      {"open", "#dc2626"},
      {"acknowledged", "#7c3aed"},
      {"resolved", "#16a34a"},
  };
  auto it = kColors->find(state);
  return it == kColors->end() ? "#6b7280" : it->second;
}

std::string Utc(double seconds, const char* format) {
  std::time_t t = static_cast<std::time_t>(std::floor(seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[64];
  std::size_t n = std::strftime(buffer, sizeof buffer, format, &tm);
  return std::string(buffer, n);
}

std::string SeriesName(const ReportSeries& s) {
  return s.instance_type.empty() ? s.workload : s.workload + " · " + s.instance_type;
}

bool InSeries(const ReportRegression& r, const ReportSeries& s) {
  return r.workload == s.workload && r.instance_type == s.instance_type;
}

std::string HistoryChart(const ReportSeries& s, const std::vector<ReportRegression>& regressions) {
  if (s.runs.empty()) return "<p class=\"muted\">No runs.</p>";
  Frame f = ChartFrame(s);
  std::string title = SeriesName(s) + ": " + s.basis + " time per step";
  return absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\""
      " aria-label=\"%s\">%s%s%s</svg>"
      "<p class=\"legend\"><span style=\"color:%s\">●</span> OK run &nbsp; "
      "<span class=\"bad-key\">×</span> failed or invalid run (not data) &nbsp; "
      "◯ first bad run of a regression, coloured by state</p>",
      kChartWidth, kChartHeight, kChartWidth, kChartHeight, HtmlEscape(title), Axes(f, s.basis),
      RunPoints(f, s), RegressionMarkers(f, s, regressions), kLineColor);
}

}  // namespace devtime::ctl
