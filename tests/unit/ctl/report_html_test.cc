// The report's renderer on constructed data: the page is self-contained, escapes what the
// collector said, draws what it should with the right numbers; the text summary agrees.
#include "services/ctl/report_html.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "services/ctl/report_chart.h"
#include "tests/unit/ctl/report_samples.h"

namespace devtime::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr long long kNight = 1795917600;  // 2026-11-29T02:00:00Z

v1::RunInfo Info(const std::string& run_id, const std::string& workload, long long started,
                 double us_per_step, v1::RunStatus status = v1::RUN_STATUS_OK) {
  v1::RunInfo info;
  info.mutable_identity()->set_run_id(run_id);
  info.mutable_identity()->set_model("rmsnorm");
  info.mutable_identity()->set_workload(workload);
  info.mutable_identity()->set_instance_type("trn1.2xlarge");
  info.mutable_identity()->set_device_kind(v1::DEVICE_KIND_NEURON);
  info.mutable_started_at()->set_seconds(started);
  info.set_status(status);
  info.set_device_us_per_step(us_per_step);
  return info;
}

// A run of 2 steps with the given per-step op times and layer times (µs per step).
v1::RunSummary Summary(const std::string& run_id, long long started,
                       const std::vector<std::pair<std::string, double>>& ops, double dispatch_us,
                       double device_us) {
  v1::RunSummary run = StepRun(run_id, started, ops, 2, dispatch_us, device_us);
  (*run.mutable_environment())["neuronx-cc"] = "2.21";
  return run;
}

v1::Regression Regression(int id, v1::RegressionState state, const std::string& first_bad) {
  return MakeRegression({.id = id,
                         .state = state,
                         .model = "rmsnorm",
                         .workload = "fused",
                         .last_good_run_id = "fused-2",
                         .first_bad_run_id = first_bad,
                         .first_bad_at = kNight + 3 * 86400,
                         .relative_change = 4.84,
                         .summary = "fused lost its fusion \"badly\"",
                         .compiler_before = "2.21",
                         .compiler_after = "2.22"});
}

SeriesReport Series(const std::string& workload, const std::string& instance_type) {
  SeriesReport s;
  s.workload = workload;
  s.instance_type = instance_type;
  return s;
}

// Two workloads: "naive" steady (one failed run), "fused" slower from its 4th night on, with
// an open regression whose last good run is the baseline.
ModelReport SampleReport() {
  ModelReport report;
  report.model = "rmsnorm";
  report.generated_at.set_seconds(kNight + 10 * 86400);
  SeriesReport naive = Series("naive", "trn1.2xlarge");
  for (int i = 0; i < 5; ++i) {
    naive.runs.push_back(Info("naive-" + std::to_string(i), "naive", kNight + i * 86400, 2355));
  }
  naive.runs.insert(naive.runs.begin() + 2,
                    Info("naive-failed", "naive", kNight + 86400 + 600, 0, v1::RUN_STATUS_FAILED));
  naive.latest = Summary("naive-4", kNight + 4 * 86400, {{"aten::mul", 1164.5}}, 60, 2355);
  naive.baseline = Summary("naive-3", kNight + 3 * 86400, {{"aten::mul", 1160}}, 60, 2350);
  naive.baseline_label = "previous OK run";
  SeriesReport fused = Series("fused", "trn1.2xlarge");
  for (int i = 0; i < 6; ++i) {
    fused.runs.push_back(
        Info("fused-" + std::to_string(i), "fused", kNight + i * 86400, i < 3 ? 403.3 : 2355));
  }
  fused.latest =
      Summary("fused-5", kNight + 5 * 86400,
              {{"aten::mul", 1164.5}, {"aten::add", 434.6}, {"aten::rsqrt", 415.0}}, 70, 2014.1);
  fused.baseline = Summary("fused-2", kNight + 2 * 86400, {{"aten::rms_norm", 403.3}}, 19, 403.3);
  fused.baseline_label = "last good run of regression 3";
  report.series = {naive, fused};
  report.regressions = {Regression(3, v1::REGRESSION_STATE_OPEN, "fused-3"),
                        Regression(1, v1::REGRESSION_STATE_RESOLVED, "fused-1")};
  return report;
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// Each of `parts` is in `text`; each missing one is its own failure.
void ExpectContains(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& part : parts) EXPECT_THAT(text, HasSubstr(part));
}

// The page from the section of series `index` on.
std::string FromSeries(const std::string& html, int index) {
  return html.substr(html.find("id=\"series-" + std::to_string(index) + "\""));
}

TEST(HtmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(HtmlEscape("aten::mul µs"), "aten::mul µs");
}

TEST(ReportHtml, IsOneSelfContainedDocument) {
  std::string html = RenderHtml(SampleReport());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("<style>"));
  EXPECT_THAT(html, HasSubstr("</html>"));
  for (const char* external :
       {"http:", "https:", "<script", "src=", "url(", "@import", "<link", "<img", "<iframe"}) {
    EXPECT_THAT(html, Not(HasSubstr(external))) << external;
  }
}

TEST(ReportHtml, EscapesEveryTextFromTheCollector) {
  ModelReport report = SampleReport();
  report.model = "<script>alert(1)</script>";
  report.series[0].workload = "a&b<i>";
  report.series[0].latest->mutable_ops(0)->set_name("<op onclick=x>");
  report.regressions[0].set_workload("<b>w</b>");
  report.regressions[0].mutable_attribution()->mutable_environment(0)->set_key("k\"><svg>");
  std::string html = RenderHtml(report);
  for (const char* raw : {"<script", "a&b<i>", "<op onclick", "<b>w</b>"}) {
    EXPECT_THAT(html, Not(HasSubstr(raw)));
  }
  ExpectContains(
      html, {"&lt;script&gt;alert(1)&lt;/script&gt;", "a&amp;b&lt;i&gt;", "&lt;op onclick=x&gt;",
             "k&quot;&gt;&lt;svg&gt;", "lost its fusion &quot;badly&quot;"});
}

TEST(ReportHtml, DrawsOneHistoryChartPerSeriesWithEveryOkRun) {
  std::string html = RenderHtml(SampleReport());
  EXPECT_EQ(Count(html, "<svg class=\"chart\""), 2u);
  EXPECT_EQ(Count(html, "<polyline"), 2u);
  // 5 + 6 OK runs are dots; the failed run is a cross, not a point of the line.
  std::regex dot("<circle cx=\"[0-9.]+\" cy=\"[0-9.]+\" r=\"3\"");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(html.begin(), html.end(), dot), std::sregex_iterator()),
      11);
  EXPECT_EQ(Count(html, "<path class=\"bad\""), 1u);
  EXPECT_THAT(html, HasSubstr("failed"));
  // Closed </svg> for each opened one: charts, op bars, layer bars.
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
}

TEST(ReportHtml, LineGoesUpWhereTheSeriesGotSlower) {
  std::string html = RenderHtml(SampleReport());
  // The second polyline is "fused": 3 points at 403.3 µs, then 3 at 2355 µs (higher = smaller y).
  std::smatch match;
  std::string rest = FromSeries(html, 1);
  ASSERT_TRUE(std::regex_search(rest, match, std::regex("<polyline[^>]*points=\"([^\"]+)\"")));
  std::vector<double> ys;
  std::string points = match[1];
  std::regex pair("([0-9.]+),([0-9.]+)");
  for (auto it = std::sregex_iterator(points.begin(), points.end(), pair);
       it != std::sregex_iterator(); ++it) {
    ys.push_back(std::stod((*it)[2]));
  }
  ASSERT_EQ(ys.size(), 6u);
  EXPECT_DOUBLE_EQ(ys[0], ys[2]);
  EXPECT_LT(ys[3], ys[2] - 100);
}

TEST(ReportHtml, MarksTheFirstBadRunOfEachRegressionWithItsState) {
  std::string html = RenderHtml(SampleReport());
  EXPECT_THAT(html, HasSubstr("#3 open"));
  EXPECT_THAT(html, HasSubstr("#1 resolved"));  // history keeps resolved markers
  EXPECT_EQ(Count(html, "<g class=\"regression\""), 2u);
}

TEST(ReportHtml, ComparesOperatorsWithTheRegressionsLastGoodRun) {
  std::string html = RenderHtml(SampleReport());
  ExpectContains(
      FromSeries(html, 1),
      {"last good run of regression 3", "<code>fused-2</code>",
       // aten::mul is new (+1164.5 µs), aten::rms_norm gone (-403.3 µs, -100 %).
       "<td class=\"op\">aten::mul</td>", ">+1.165 ms</td><td class=\"num worse\">new</td>",
       ">-403.3 µs</td><td class=\"num better\">-100.0 %</td>",
       // The whole run: 403.3 µs -> 2.014 ms per step.
       ">403.3 µs</td><td class=\"num\">2.014 ms</td>", "+399.4 %"});
}

TEST(ReportHtml, FoldsTheOperatorTailIntoOther) {
  ModelReport report = SampleReport();
  auto& latest = *report.series[0].latest;
  for (int i = 0; i < 20; ++i) {
    auto* op = latest.add_ops();
    op->set_name("op" + std::to_string(i));
    op->set_calls(1);
    op->set_self_device_us(2.0 * (i + 1));
  }
  std::string html = RenderHtml(report);
  EXPECT_THAT(html, HasSubstr("other (6 operators)"));
  EXPECT_THAT(html, Not(HasSubstr(">op0<")));  // the smallest is folded
  EXPECT_THAT(html, HasSubstr(">op19<"));
}

TEST(ReportHtml, LayersPerStepOfLatestAndBaseline) {
  std::string html = RenderHtml(SampleReport());
  ExpectContains(
      FromSeries(html, 1),
      {"<svg class=\"layers\"",
       // device execution 403.3 -> 2014.1 µs per step; dispatch 19 -> 70.
       "device execution</td><td class=\"num\">403.3 µs</td><td class=\"num\">2.014 ms</td>",
       "framework dispatch</td><td class=\"num\">19.0 µs</td>"});
}

TEST(ReportHtml, TableListsOnlyLiveRegressions) {
  std::string html = RenderHtml(SampleReport());
  std::string table = html.substr(html.find("<table class=\"regressions\""));
  table = table.substr(0, table.find("</table>"));
  ExpectContains(table, {"<a href=\"#regression-3\">3</a></td>", ">open</span>", "+484.0 %",
                         "aten::mul <span class=\"nowrap\">+1.165 ms</span>",
                         "<code>neuronx-cc</code> 2.21 → 2.22", "fused-3"});
  EXPECT_THAT(table, Not(HasSubstr("fused-1<")));  // resolved: not in the table
}

TEST(ReportHtml, RegressionSectionLinksBothRunsTraceFilesWithTheCommandsThatOpenThem) {
  ModelReport report = SampleReport();
  v1::Regression& r = report.regressions[0];
  v1::Artifact* good = r.add_last_good_traces();
  good->set_kind("framework_trace");
  good->set_uri("file:///traces/m/fused/good/trace.json");
  v1::Artifact* bad = r.add_first_bad_traces();
  bad->set_kind("ntff");
  bad->set_uri("file:///traces/m/fused/bad/s/a.ntff");
  v1::Artifact* remote = r.add_first_bad_traces();
  remote->set_kind("framework_trace");
  remote->set_uri("javascript:alert(1)//t.json");
  std::string html = RenderHtml(report);
  const std::string id = "id=\"regression-" + std::to_string(r.id()) + "\"";
  std::string section = html.substr(html.find(id));
  section = section.substr(0, section.find("</section>"));
  ExpectContains(section,
                 {"last good run <a href=\"#run-" + r.last_good_run_id() + "\">",
                  "<a href=\"file:///traces/m/fused/good/trace.json\"", ">trace.json</a>",
                  "<code>Perfetto UI: trace_processor --httpd &#39;/traces/m/fused/good/"
                  "trace.json&#39;, then open https://ui.perfetto.dev; or, without "
                  "trace_processor (not packaged in Debian), load the file in "
                  "https://ui.perfetto.dev directly (Open trace file)</code>",
                  "first bad run <a href=\"#run-" + r.first_bad_run_id() + "\">",
                  "<code>Neuron Explorer: neuron-explorer view -d &#39;/traces/m/fused/bad/s&#39;"
                  "</code>",
                  "<code>javascript:alert(1)//t.json</code>"});
  EXPECT_THAT(html, Not(HasSubstr("href=\"javascript:")));
}

TEST(ReportHtml, SaysWhyRegressionsAreMissing) {
  ModelReport report = SampleReport();
  report.regressions.clear();
  report.regressions_note = "This collector does not serve regressions";
  std::string html = RenderHtml(report);
  EXPECT_THAT(html, HasSubstr("<p class=\"note\">This collector does not serve regressions"));
  EXPECT_THAT(html, HasSubstr("No suspected, open or acknowledged regressions."));
}

TEST(ReportHtml, SeriesWithOneRunAndNoBaseline) {
  ModelReport report;
  report.model = "tiny";
  SeriesReport s = Series("only", "");
  s.runs.push_back(Info("only-1", "only", kNight, 12.5));
  s.latest = Summary("only-1", kNight, {{"aten::add", 12.5}}, 1, 12.5);
  report.series.push_back(s);
  std::string html = RenderHtml(report);
  EXPECT_THAT(html, HasSubstr("baseline: none"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">12.5 µs</td>"));
  EXPECT_THAT(html, Not(HasSubstr("nan")));
  EXPECT_THAT(html, Not(HasSubstr("inf")));
}

// SampleReport with the summaries of "fused"'s six nights fetched: steps 400 ± 10 µs, then
// 2355 ± 20 µs from fused-3 on, when neuronx-cc went from 2.21 to 2.22.
ModelReport FetchedReport() {
  ModelReport report = SampleReport();
  SeriesReport& fused = report.series[1];
  for (int i = 0; i < 6; ++i) {
    bool lost = i >= 3;
    v1::RunSummary run = lost ? Summary("fused-" + std::to_string(i), kNight + i * 86400,
                                        {{"aten::mul", 1164.5}, {"aten::add", 434.6}}, 70, 2014.1)
                              : Summary("fused-" + std::to_string(i), kNight + i * 86400,
                                        {{"aten::rms_norm", 403.3}}, 19, 403.3);
    if (lost) (*run.mutable_environment())["neuronx-cc"] = "2.22";
    SetStepTimes(run, lost ? std::vector<double>{2335, 2375} : std::vector<double>{393.3, 413.3});
    fused.recent.push_back(run);
  }
  return report;
}

// The points of the first <polygon class="noise"> in `html`, as (x, y) pairs.
std::vector<std::pair<double, double>> BandPoints(const std::string& html) {
  std::smatch match;
  std::vector<std::pair<double, double>> points;
  if (!std::regex_search(html, match, std::regex("class=\"noise\"[^>]*points=\"([^\"]+)\""))) {
    return points;
  }
  std::string text = match[1];
  std::regex pair("([0-9.]+),([0-9.]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pair); it != std::sregex_iterator();
       ++it) {
    points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return points;
}

TEST(ReportHtml, NoiseBandSpansEachRunsStepSpread) {
  std::string fused = FromSeries(RenderHtml(FetchedReport()), 1);
  EXPECT_EQ(Count(fused.substr(0, fused.find("</svg>")), "<polygon class=\"noise\""), 1u);
  auto band = BandPoints(fused);
  ASSERT_EQ(band.size(), 12u);  // six runs: upper edge forward, lower edge back
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(band[i].first, band[11 - i].first);  // the same run's x
    EXPECT_LT(band[i].second, band[11 - i].second);       // upper above lower
  }
  // The wider spread after the step (±28 µs against ±14 µs) is a wider band.
  EXPECT_GT(band[6].second - band[5].second, band[11].second - band[0].second);
  EXPECT_THAT(fused, HasSubstr("noise: each run ± the stddev of its steps"));
}

TEST(ReportHtml, WithoutFetchedRunsTheBandIsTheHistorysJitterAndSaysSo) {
  std::string naive = FromSeries(RenderHtml(SampleReport()), 0);
  naive = naive.substr(0, naive.find("id=\"series-1\""));
  EXPECT_EQ(Count(naive, "<polygon class=\"noise\""), 1u);
  EXPECT_THAT(naive, HasSubstr("run-to-run jitter of the newest 30 OK runs"));
}

TEST(ReportHtml, DrawsTheDetectorThresholdAroundTheBaselineRun) {
  ModelReport report = FetchedReport();
  report.threshold = 0.05;
  std::string fused = FromSeries(RenderHtml(report), 1);
  std::regex line("class=\"threshold\" x1=\"[0-9.]+\" y1=\"([0-9.]+)\"");
  std::vector<double> ys;
  for (auto it = std::sregex_iterator(fused.begin(), fused.end(), line);
       it != std::sregex_iterator(); ++it) {
    ys.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(ys.size(), 2u);  // baseline × 1.05 and × 0.95, around fused-2's point
  std::smatch dot;
  ASSERT_TRUE(std::regex_search(
      fused, dot, std::regex("<circle cx=\"[0-9.]+\" cy=\"([0-9.]+)\"[^>]*><title>[^<]*fused-2<")));
  double baseline_y = std::stod(dot[1]);
  EXPECT_LT(ys[0], baseline_y);
  EXPECT_GT(ys[1], baseline_y);
  EXPECT_NEAR(baseline_y - ys[0], ys[1] - baseline_y, 0.2);
  ExpectContains(fused, {">±5 %</text>", "detector threshold: ±5 % of the baseline run"});
}

TEST(ReportHtml, MarksAndLabelsTheEnvironmentChangeOnTheTimeAxis) {
  std::string html = RenderHtml(FetchedReport());
  std::string fused = FromSeries(html, 1);
  EXPECT_EQ(Count(fused.substr(0, fused.find("</svg>")), "<g class=\"env-change\""), 1u);
  ExpectContains(fused, {"<a href=\"#run-fused-3\"><g class=\"env-change\"",
                         ">neuronx-cc 2.21 → 2.22</text>"});
  std::string naive = FromSeries(html, 0);
  naive = naive.substr(0, naive.find("id=\"series-1\""));
  EXPECT_EQ(Count(naive, "<g class=\"env-change\""), 0u);  // nothing fetched for "naive"
}

TEST(TimeTicks, ADateLabelsOnlyAMidnight) {
  // 2026-11-24T02:00Z to 2026-12-04T02:00Z: ten days, ticked at midnights.
  const double start = kNight - 5 * 86400;
  auto days = TimeTicks(start, start + 10 * 86400);
  ASSERT_GE(days.size(), 3u);
  ASSERT_LT(days.size(), 7u);
  for (const TimeTick& tick : days) {
    EXPECT_EQ(std::fmod(tick.seconds, 86400), 0) << tick.label;
    EXPECT_EQ(tick.label, Utc(tick.seconds, "%Y-%m-%d"));
  }
  EXPECT_GE(days.front().seconds, start);
  EXPECT_EQ(days.front().label, "2026-11-25");  // every second midnight: ten days in 5 ticks
  // A day and a half: whole hours, each labelled with its time unless it is a midnight.
  auto hours = TimeTicks(start, start + 36 * 3600);
  ASSERT_GE(hours.size(), 3u);
  for (const TimeTick& tick : hours) {
    const bool midnight = std::fmod(tick.seconds, 86400) == 0;
    EXPECT_EQ(std::fmod(tick.seconds, 3600), 0) << tick.label;
    EXPECT_EQ(tick.label, Utc(tick.seconds, midnight ? "%Y-%m-%d" : "%m-%d %H:%M"));
  }
  EXPECT_EQ(hours.front().label, "11-24 06:00");
}

TEST(HistoryChart, LabelsADateOnlyAtItsMidnight) {
  // Six nights at 02:00 from 2026-11-24: the fusion lost on 11-25 must not look like 11-24.
  ReportSeries s;
  s.workload = "fused";
  s.basis = "device";
  const double first = kNight - 5 * 86400;  // 2026-11-24T02:00:00Z
  for (int i = 0; i < 6; ++i) {
    ReportRun run;
    run.run_id = "fused-" + std::to_string(i);
    run.started_at = {first + i * 86400, Utc(first + i * 86400, "%Y-%m-%dT%H:%M:%SZ")};
    run.ok = true;
    run.us_per_step = i == 0 ? 403 : 2355;
    s.runs.push_back(run);
  }
  const std::string svg = HistoryChart(s, {}, 0.05);
  std::regex tick(
      "<text class=\"tick\" x=\"([0-9.]+)\" y=\"[0-9.]+\" text-anchor=\"middle\">"
      "([0-9]{4}-[0-9]{2}-[0-9]{2})</text>");
  std::regex dot("<circle cx=\"([0-9.]+)\"");
  std::vector<double> xs;  // the runs' x, oldest first
  for (std::sregex_iterator it(svg.begin(), svg.end(), dot), end; it != end; ++it) {
    xs.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(xs.size(), 6u);
  const double px_per_day = xs[1] - xs[0];
  int dates = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it, ++dates) {
    // A date's tick is its midnight: 2 h (1/12 of a day) before that night's run.
    const std::string label = (*it)[2];
    const int night = std::stoi(label.substr(8, 2)) - 24;
    EXPECT_NEAR(std::stod((*it)[1]), xs[night] - px_per_day / 12, 0.2) << label;
  }
  EXPECT_GT(dates, 2);
}

TEST(ReportHtml, EveryLinkLeadsToASectionOfThePage) {
  std::string html = RenderHtml(FetchedReport());
  std::set<std::string> ids;
  std::regex id("id=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id); it != std::sregex_iterator();
       ++it) {
    ids.insert((*it)[1]);
  }
  std::regex href("href=\"#([^\"]+)\"");
  std::set<std::string> targets;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator();
       ++it) {
    targets.insert((*it)[1]);
    EXPECT_TRUE(ids.count((*it)[1])) << "no section for #" << (*it)[1];
  }
  // Runs (chart points, breakdown, tables) and regressions (rows, markers) are links.
  for (const char* target : {"run-fused-2", "run-fused-5", "run-naive-failed", "run-naive-4",
                             "regression-3", "regression-1", "series-1"}) {
    EXPECT_TRUE(targets.count(target)) << target;
  }
  ExpectContains(html, {"<tr id=\"run-fused-3\">",
                        "<section class=\"regression-detail\" "
                        "id=\"regression-3\">"});
}

TEST(ReportHtml, OperatorHistoryChartsTheTopOperatorsOfTheFetchedRuns) {
  std::string fused = FromSeries(RenderHtml(FetchedReport()), 1);
  ASSERT_THAT(fused, HasSubstr("<svg class=\"op-chart\""));
  std::string chart = fused.substr(fused.find("<svg class=\"op-chart\""));
  chart = chart.substr(0, chart.find("</p>"));
  EXPECT_EQ(Count(chart, "<polyline class=\"op-line\""), 3u);  // mul, add, rms_norm
  EXPECT_THAT(fused, HasSubstr("<h3>Top operators over the newest 6 OK runs</h3>"));
  ExpectContains(chart, {"</span>aten::mul", "</span>aten::add", "</span>aten::rms_norm",
                         "aten::mul  2026-12-02T02:00:00Z  1.165 ms"});
  EXPECT_LT(chart.find("</span>aten::mul"), chart.find("</span>aten::add"));  // largest first
  EXPECT_THAT(FromSeries(RenderHtml(SampleReport()), 0), HasSubstr("No run summaries fetched."));
}

TEST(ReportHtml, ARegressionCountsOnlyInTheSeriesOfItsMetric) {
  // A CPU job and a Trainium job of one workload on one host type are two series (issue 22):
  // the device-time regression is live in the device series only.
  ReportModel model;
  model.model = "rmsnorm";
  for (const char* basis : {"self CPU", "device"}) {
    ReportSeries s;
    s.workload = "fused";
    s.instance_type = "trn1.2xlarge";
    s.basis = basis;
    model.series.push_back(s);
  }
  ReportRegression r;
  r.id = 7;
  r.state = "open";
  r.live = true;
  r.workload = "fused";
  r.instance_type = "trn1.2xlarge";
  r.basis = "device";
  model.regressions.push_back(r);
  const std::string html = RenderReportHtml(model);
  std::regex row("<tr><td><a href=\"#series-([01])\">.*?<td class=\"num\">([0-9]+)</td></tr>");
  std::map<std::string, std::string> live;
  for (std::sregex_iterator it(html.begin(), html.end(), row), end; it != end; ++it) {
    live[(*it)[1]] = (*it)[2];
  }
  EXPECT_EQ(live["0"], "0") << "the CPU series";
  EXPECT_EQ(live["1"], "1") << "the device series";
}

TEST(ReportText, CpuStepTimesAreScaled) {
  ModelReport report = SampleReport();
  report.series[0].runs.back().set_device_us_per_step(1016805.6);
  std::string text = RenderText(report);
  EXPECT_THAT(text, HasSubstr("1.017 s"));
  EXPECT_THAT(text, Not(HasSubstr("1016805.6")));
  EXPECT_THAT(text, HasSubstr("per step"));
}

TEST(ReportText, SummarizesSeriesAndLiveRegressions) {
  std::string text = RenderText(SampleReport());
  ExpectContains(text, {"model rmsnorm: 12 runs in 2 series, 1 live regression", "naive",
                        "+399.4 %", "last good run of regression 3", "fused-3 2026-12-02"});
  EXPECT_THAT(text, Not(HasSubstr("fused-1 ")));
}

}  // namespace
}  // namespace devtime::ctl
