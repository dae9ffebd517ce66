#include "services/ctl/report_chart.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/ctl/report_html.h"

namespace devtime::ctl {
namespace {

constexpr int kChartWidth = 880;
constexpr int kChartHeight = 260;
// The operator lines: none is the OK line's blue or a regression state's colour.
constexpr const char* kOpColors[] = {"#0891b2", "#c026d3", "#65a30d", "#b45309", "#475569"};

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
  double t0 = 0, t1 = 1;  // seconds since the epoch
  double v0 = 0, v1 = 1;  // µs per step
  // The right margin leaves room for the last date label, centred on the plot's edge.
  double left = 70, top = 14, width = kChartWidth - 115, height = kChartHeight - 50;

  double X(double t) const { return left + (t - t0) / (t1 - t0) * width; }
  double Y(double v) const { return top + height - (v - v0) / (v1 - v0) * height; }
};

// A frame over the times [t0, t1] and the values `values`: the y axis spans them with a
// margin, from zero when `from_zero` or when they come within a third of the range of zero.
Frame FitFrame(double t0, double t1, const std::vector<double>& values, bool from_zero) {
  Frame f;
  f.t0 = t0;
  f.t1 = t1;
  if (f.t1 - f.t0 < 3600) {  // one run, or a burst: centre it in a day
    f.t0 -= 43200;
    f.t1 += 43200;
  }
  double lo = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? 1 : *std::max_element(values.begin(), values.end());
  if (hi <= 0) hi = 1;
  double margin = std::max((hi - lo) * 0.15, hi * 0.03);
  lo = std::max(0.0, lo - margin);
  hi += margin;
  if (from_zero || lo < (hi - lo) / 3) lo = 0;
  double step = NiceStep(hi - lo, 5);
  f.v0 = std::floor(lo / step) * step;
  f.v1 = std::ceil(hi / step) * step;
  return f;
}

// The unit the axis ticks are written in: the one of its largest value.
struct Unit {
  double us;
  const char* name;
};
Unit UnitFor(double us) {
  if (us >= 1e6) return {1e6, "s"};
  if (us >= 1e3) return {1e3, "ms"};
  return {1, "µs"};
}

std::string Axes(const Frame& f, const std::string& label) {
  std::string svg;
  double step = NiceStep(f.v1 - f.v0, 5);
  Unit unit = UnitFor(f.v1);
  for (double v = f.v0; v <= f.v1 + step / 2; v += step) {
    absl::StrAppendFormat(
        &svg,
        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
        f.left, f.Y(v), f.left + f.width, f.Y(v), f.left - 6, f.Y(v) + 4, v / unit.us);
  }
  for (const TimeTick& tick : TimeTicks(f.t0, f.t1)) {
    absl::StrAppendFormat(
        &svg, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
        f.X(tick.seconds), f.top + f.height + 18, tick.label);
  }
  absl::StrAppendFormat(&svg,
                        "<text class=\"axis\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\""
                        " transform=\"rotate(-90 14 %.1f)\">%s (%s)</text>",
                        f.top + f.height / 2, f.top + f.height / 2, HtmlEscape(label), unit.name);
  return svg;
}

// A point that links to its run's section.
std::string Dot(double x, double y, const char* color, const std::string& run_id,
                const std::string& title) {
  return absl::StrFormat(
      "<a href=\"#%s\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s</title>"
      "</circle></a>",
      HtmlEscape(RunAnchor(run_id)), x, y, color, HtmlEscape(title));
}

std::string RunPoints(const Frame& f, const ReportSeries& s) {
  std::string line, dots;
  for (const auto& run : s.runs) {
    double x = f.X(run.started_at.seconds);
    const std::string& when = run.started_at.text;
    if (!run.ok) {  // history, never data: a cross on the axis
      double y = f.Y(f.v0);
      absl::StrAppendFormat(
          &dots,
          "<a href=\"#%s\"><path class=\"bad\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\">"
          "<title>%s %s: %s</title></path></a>",
          HtmlEscape(RunAnchor(run.run_id)), x - 4, y - 4, x + 4, y + 4, x - 4, y + 4, x + 4, y - 4,
          HtmlEscape(when), HtmlEscape(run.status), HtmlEscape(run.status_reason));
      continue;
    }
    double y = f.Y(run.us_per_step);
    absl::StrAppendFormat(&line, "%s%.1f,%.1f", line.empty() ? "" : " ", x, y);
    std::string noise = run.noise_us ? " ± " + ScaledTime(*run.noise_us) : "";
    dots += Dot(x, y, kLineColor, run.run_id,
                when + "  " + ScaledTime(run.us_per_step) + noise + " per step  run " + run.run_id);
  }
  std::string svg;
  if (!line.empty()) {
    absl::StrAppendFormat(
        &svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>",
        kLineColor, line);
  }
  return svg + dots;
}

// The spread drawn around a run's value; nullopt where the band has a gap.
std::optional<double> Spread(const ReportSeries& s, const ReportRun& run) {
  if (!run.ok) return std::nullopt;
  if (s.noise_source == "history") return s.history_noise_us;
  return run.noise_us;
}

// value ± spread over each stretch of consecutive OK runs that have one; a lone run is a bar.
std::string NoiseBand(const Frame& f, const ReportSeries& s) {
  std::string svg;
  std::vector<const ReportRun*> stretch;
  auto flush = [&] {
    if (stretch.empty()) return;
    std::string upper, lower;
    for (const ReportRun* run : stretch) {
      double x = f.X(run->started_at.seconds), sd = *Spread(s, *run);
      absl::StrAppendFormat(&upper, "%.1f,%.1f ", x, f.Y(run->us_per_step + sd));
      lower = absl::StrFormat("%.1f,%.1f ", x, f.Y(std::max(f.v0, run->us_per_step - sd))) + lower;
    }
    if (stretch.size() == 1) {  // a bar 6 px wide
      double x = f.X(stretch[0]->started_at.seconds), sd = *Spread(s, *stretch[0]);
      upper = absl::StrFormat("%.1f,%.1f %.1f,%.1f ", x - 3, f.Y(stretch[0]->us_per_step + sd),
                              x + 3, f.Y(stretch[0]->us_per_step + sd));
      double y = f.Y(std::max(f.v0, stretch[0]->us_per_step - sd));
      lower = absl::StrFormat("%.1f,%.1f %.1f,%.1f", x + 3, y, x - 3, y);
    }
    absl::StrAppendFormat(&svg, "<polygon class=\"noise\" fill=\"%s\" points=\"%s%s\"/>",
                          kBandColor, upper, lower);
    stretch.clear();
  };
  for (const auto& run : s.runs) {
    if (!run.ok) continue;  // a failed run is no gap: it is not data
    if (Spread(s, run)) {
      stretch.push_back(&run);
    } else {
      flush();
    }
  }
  flush();
  return svg;
}

// Dashed lines at the reference value × (1 ± threshold).
std::string ThresholdLines(const Frame& f, const ReportSeries& s, double threshold) {
  if (!s.reference_us) return "";
  std::string svg;
  for (double sign : {1.0, -1.0}) {
    double y = f.Y(*s.reference_us * (1 + sign * threshold));
    absl::StrAppendFormat(
        &svg,
        "<line class=\"threshold\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
        "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
        f.left, y, f.left + f.width, y, kThresholdColor);
  }
  absl::StrAppendFormat(&svg,
                        "<text class=\"marker halo\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\">±%g %%"
                        "</text>",
                        f.left + f.width + 4, f.Y(*s.reference_us) + 4, kThresholdColor,
                        100 * threshold);
  return svg;
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
        "<a href=\"#%s\"><g class=\"regression\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
        "y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 3\"/><circle cx=\"%.1f\" cy=\"%.1f\" "
        "r=\"7\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\""
        " fill=\"%s\" class=\"marker halo\">#%d %s</text><title>regression %d (%s): %s</title>"
        "</g></a>",
        HtmlEscape(RegressionAnchor(r.id)), x, f.top, x, f.top + f.height, color, x, y, color,
        x + 5, f.top + 10, color, r.id, HtmlEscape(r.state), r.id, HtmlEscape(r.state),
        HtmlEscape(r.summary));
  }
  return svg;
}

std::string ChangeText(const ReportEnvChange& change) {
  return change.key + " " + (change.before.empty() ? "(none)" : change.before) + " → " +
         (change.after.empty() ? "(none)" : change.after);
}

// A dotted line at each environment change, labelled at the bottom of the plot (left of the
// line, where a regression's label is right of it at the top).
std::string EnvMarkers(const Frame& f, const ReportSeries& s) {
  std::string svg;
  for (const auto& marker : s.env_changes) {
    double x = f.X(marker.started_at.seconds);
    std::vector<std::string> all;
    for (const auto& change : marker.changes) all.push_back(ChangeText(change));
    std::string label = all[0];
    if (all.size() > 1) label += absl::StrFormat(" (+%d more)", all.size() - 1);
    absl::StrAppendFormat(
        &svg,
        "<a href=\"#%s\"><g class=\"env-change\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
        "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" class=\"marker halo\" text-anchor=\"end\">%s"
        "</text><title>environment of run %s: %s</title></g></a>",
        HtmlEscape(RunAnchor(marker.run_id)), x, f.top, x, f.top + f.height, kEnvColor, x - 4,
        f.top + f.height - 6, kEnvColor, HtmlEscape(label), HtmlEscape(marker.run_id),
        HtmlEscape(absl::StrJoin(all, "; ")));
  }
  return svg;
}

// Every value the history chart draws, for its y axis.
std::vector<double> HistoryValues(const ReportSeries& s, double threshold) {
  std::vector<double> values;
  for (const auto& run : s.runs) {
    if (!run.ok) continue;
    double sd = Spread(s, run).value_or(0);
    values.insert(values.end(), {run.us_per_step - sd, run.us_per_step + sd});
  }
  if (s.reference_us) {
    values.insert(values.end(),
                  {*s.reference_us * (1 - threshold), *s.reference_us * (1 + threshold)});
  }
  return values;
}

std::string NoiseLegend(const ReportSeries& s) {
  if (s.noise_source == "run") {
    return absl::StrFormat(
        "<span class=\"key\" style=\"background:%s\"></span>noise: each run ± the stddev of its "
        "steps (the runs whose summaries were fetched) &nbsp; ",
        kBandColor);
  }
  if (s.noise_source == "history") {
    return absl::StrFormat(
        "<span class=\"key\" style=\"background:%s\"></span>noise: ± the run-to-run jitter of "
        "the newest 30 OK runs (no fetched run has per-step times) &nbsp; ",
        kBandColor);
  }
  return "";
}

}  // namespace

std::vector<TimeTick> TimeTicks(double t0, double t1) {
  constexpr double kHour = 3600, kDay = 86400;
  constexpr int kMostTicks = 7;
  // Whole hours that divide a day, then whole days; UTC midnights are multiples of a day.
  double step = kHour;
  for (double candidate : {kHour, 2 * kHour, 3 * kHour, 6 * kHour, 12 * kHour, kDay, 2 * kDay,
                           7 * kDay, 14 * kDay, 28 * kDay}) {
    step = candidate;
    if ((t1 - t0) / step < kMostTicks) break;
  }
  while ((t1 - t0) / step >= kMostTicks) step *= 2;  // years: 56, 112, ... days
  std::vector<TimeTick> ticks;
  for (double t = std::ceil(t0 / step) * step; t <= t1; t += step) {
    const bool midnight = std::fmod(t, kDay) == 0;
    ticks.push_back({t, Utc(t, midnight ? "%Y-%m-%d" : "%m-%d %H:%M")});
  }
  return ticks;
}

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
  return r.workload == s.workload && r.instance_type == s.instance_type && r.basis == s.basis;
}

std::string RunAnchor(const std::string& run_id) { return "run-" + run_id; }
std::string RegressionAnchor(int64_t id) { return "regression-" + std::to_string(id); }

std::string RunLink(const std::string& run_id) {
  return absl::StrFormat("<a href=\"#%s\"><code>%s</code></a>", HtmlEscape(RunAnchor(run_id)),
                         HtmlEscape(run_id));
}

std::string HistoryChart(const ReportSeries& s, const std::vector<ReportRegression>& regressions,
                         double threshold) {
  if (s.runs.empty()) return "<p class=\"muted\">No runs.</p>";
  Frame f = FitFrame(s.runs.front().started_at.seconds, s.runs.back().started_at.seconds,
                     HistoryValues(s, threshold), false);
  std::string title = SeriesName(s) + ": " + s.basis + " time per step";
  return absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\""
      " aria-label=\"%s\">%s%s%s%s%s%s</svg>"
      "<p class=\"legend\"><span style=\"color:%s\">●</span> OK run &nbsp; "
      "<span class=\"bad-key\">×</span> failed or invalid run (not data) &nbsp; %s"
      "<span style=\"color:%s\">- -</span> detector threshold: ±%g %% of the %s &nbsp; "
      "<span style=\"color:%s\">┊</span> environment change &nbsp; "
      "◯ first bad run of a regression, coloured by state</p>",
      kChartWidth, kChartHeight, kChartWidth, kChartHeight, HtmlEscape(title),
      Axes(f, s.basis + " time per step"), NoiseBand(f, s), ThresholdLines(f, s, threshold),
      EnvMarkers(f, s), RunPoints(f, s), RegressionMarkers(f, s, regressions), kLineColor,
      NoiseLegend(s), kThresholdColor, 100 * threshold,
      s.breakdown && s.breakdown->baseline ? "baseline run" : "latest run", kEnvColor);
}

std::string OpHistoryChart(const ReportSeries& s) {
  if (s.op_history.empty()) return "<p class=\"muted\">No run summaries fetched.</p>";
  double t0 = 1e300, t1 = -1e300;
  std::vector<double> values;
  for (const auto& op : s.op_history) {
    for (const auto& point : op.points) {
      t0 = std::min(t0, point.started_at.seconds);
      t1 = std::max(t1, point.started_at.seconds);
      values.push_back(point.us);
    }
  }
  Frame f = FitFrame(t0, t1, values, true);
  std::string lines, legend;
  for (std::size_t i = 0; i < s.op_history.size(); ++i) {
    const ReportOpHistory& op = s.op_history[i];
    const char* color = kOpColors[i % std::size(kOpColors)];
    std::string points, dots;
    for (const auto& point : op.points) {
      double x = f.X(point.started_at.seconds), y = f.Y(point.us);
      absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ", x, y);
      dots += Dot(x, y, color, point.run_id,
                  op.op + "  " + point.started_at.text + "  " + ScaledTime(point.us) +
                      " per step  run " + point.run_id);
    }
    absl::StrAppendFormat(&lines,
                          "<polyline class=\"op-line\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\" points=\"%s\"/>%s",
                          color, points, dots);
    absl::StrAppendFormat(&legend, "<span class=\"key\" style=\"background:%s\"></span>%s ", color,
                          HtmlEscape(op.op));
  }
  std::string title = SeriesName(s) + ": top operators, " + s.basis + " time per step";
  return absl::StrFormat(
      "<svg class=\"op-chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\""
      " aria-label=\"%s\">%s%s</svg><p class=\"legend\">%s</p>",
      kChartWidth, kChartHeight, kChartWidth, kChartHeight, HtmlEscape(title),
      Axes(f, s.basis + " self time per step"), lines, legend);
}

}  // namespace devtime::ctl
