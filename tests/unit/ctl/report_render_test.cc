// The report page as a browser draws it: headless Chromium renders a demo-like report to a
// PNG, which is decoded here (zlib) and must show the charts' colours. A blank page must fail
// the same check, so the check is run on one first. Needs no collector.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>

#include "services/ctl/report_html.h"
#include "tests/support/process.h"
#include "tests/unit/ctl/report_samples.h"

namespace devtime::ctl {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr long long kFirstNight = 1794708000;  // 2026-11-15T02:00:00Z

// ---- a minimal PNG decoder: 8-bit RGB or RGBA, not interlaced (what Chromium writes) ----

struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> pixels;  // 0xRRGGBB
};

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

int Paeth(int a, int b, int c) {
  int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// Reverses the per-row filters in place (PNG spec, section 9).
bool Unfilter(std::vector<unsigned char>& data, int width, int height, int channels,
              std::vector<unsigned char>* out) {
  const std::size_t stride = static_cast<std::size_t>(width) * channels;
  if (data.size() != (stride + 1) * height) return false;
  out->assign(stride * height, 0);
  for (int y = 0; y < height; ++y) {
    unsigned char filter = data[y * (stride + 1)];
    const unsigned char* in = &data[y * (stride + 1) + 1];
    unsigned char* row = &(*out)[y * stride];
    const unsigned char* up = y > 0 ? row - stride : nullptr;
    for (std::size_t x = 0; x < stride; ++x) {
      int a = x >= static_cast<std::size_t>(channels) ? row[x - channels] : 0;
      int b = up ? up[x] : 0;
      int c = up && x >= static_cast<std::size_t>(channels) ? up[x - channels] : 0;
      int predictor = filter == 0   ? 0
                      : filter == 1 ? a
                      : filter == 2 ? b
                      : filter == 3 ? (a + b) / 2
                      : filter == 4 ? Paeth(a, b, c)
                                    : -1;
      if (predictor < 0) return false;
      row[x] = static_cast<unsigned char>(in[x] + predictor);
    }
  }
  return true;
}

std::optional<Image> DecodePng(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
  Image image;
  int channels = 0;
  std::vector<unsigned char> compressed;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    uint32_t length = BigEndian32(p + at);
    std::string type = bytes.substr(at + 4, 4);
    const unsigned char* body = p + at + 8;
    if (at + 12 + length > bytes.size()) return std::nullopt;
    if (type == "IHDR") {
      image.width = static_cast<int>(BigEndian32(body));
      image.height = static_cast<int>(BigEndian32(body + 4));
      if (body[8] != 8 || body[12] != 0) return std::nullopt;  // 8-bit, not interlaced
      channels = body[9] == 2 ? 3 : body[9] == 6 ? 4 : 0;
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), body, body + length);
    }
    at += 12 + length;
  }
  if (channels == 0 || image.width <= 0 || image.height <= 0) return std::nullopt;
  uLongf size = static_cast<uLongf>((image.width * channels + 1) * image.height);
  std::vector<unsigned char> filtered(size);
  if (uncompress(filtered.data(), &size, compressed.data(), compressed.size()) != Z_OK) {
    return std::nullopt;
  }
  filtered.resize(size);
  std::vector<unsigned char> raw;
  if (!Unfilter(filtered, image.width, image.height, channels, &raw)) return std::nullopt;
  for (std::size_t i = 0; i < raw.size(); i += channels) {
    image.pixels.push_back((uint32_t{raw[i]} << 16) | (uint32_t{raw[i + 1]} << 8) | raw[i + 2]);
  }
  return image;
}

// What a rendered page looks like, in numbers.
struct PageStats {
  std::size_t distinct_colors = 0;
  double ink = 0;             // fraction of pixels that are not the page background
  std::size_t line_blue = 0;  // pixels of the charts' #2563eb (line, bars, device layer)
  std::size_t open_red = 0;   // pixels of #dc2626 (an open regression)
  std::size_t band = 0;       // #bfdbfe: the noise band
  std::size_t threshold = 0;  // #ea580c: the detector's threshold lines
  std::size_t env = 0;        // #0d9488: environment change markers
  std::size_t op_line = 0;    // #0891b2: the first line of each operator history
};

// Within a few levels per channel: colour management may shift a colour slightly.
bool Near(uint32_t pixel, uint32_t color) {
  for (int shift : {16, 8, 0}) {
    int a = static_cast<int>((pixel >> shift) & 0xff),
        b = static_cast<int>((color >> shift) & 0xff);
    if (std::abs(a - b) > 6) return false;
  }
  return true;
}

PageStats Measure(const Image& image) {
  PageStats stats;
  std::set<uint32_t> colors(image.pixels.begin(), image.pixels.end());
  stats.distinct_colors = colors.size();
  std::size_t ink = 0;
  for (uint32_t pixel : image.pixels) {
    ink += pixel != 0xffffff;
    stats.line_blue += Near(pixel, 0x2563eb);
    stats.open_red += Near(pixel, 0xdc2626);
    stats.band += Near(pixel, 0xbfdbfe);
    stats.threshold += Near(pixel, 0xea580c);
    stats.env += Near(pixel, 0x0d9488);
    stats.op_line += Near(pixel, 0x0891b2);
  }
  stats.ink = static_cast<double>(ink) / static_cast<double>(image.pixels.size());
  return stats;
}

// The check a rendered report must pass; a blank page fails it.
bool LooksLikeAReport(const PageStats& s) {
  return s.distinct_colors >= 50 && s.ink > 0.02 && s.line_blue > 500 && s.open_red > 50;
}

// The parts report v2 added are drawn: noise band, threshold, environment marker, operator
// history. A blank page and a page of v1 charts fail it.
bool ShowsTheV2Parts(const PageStats& s) {
  return s.band > 2000 && s.threshold > 300 && s.env > 100 && s.op_line > 300;
}

// Renders `html` with headless Chromium; the PNG's path, or "" when Chromium failed.
std::string Screenshot(const std::string& html, const std::string& name, int height = 2000) {
  std::string dir = devtime::testing::MakeTempDir("report-render");
  std::string page = dir + "/" + name + ".html", png = dir + "/" + name + ".png";
  std::ofstream(page) << html;
  auto result = devtime::testing::RunCommand(
      {kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + dir + "/profile", "--screenshot=" + png,
       "--window-size=1280," + std::to_string(height), "file://" + page},
      std::chrono::seconds(90));
  if (result.exit_code != 0 || access(png.c_str(), R_OK) != 0) {
    ADD_FAILURE() << "chromium exit " << result.exit_code << ":\n" << result.err;
    return "";
  }
  std::cout << "rendered " << png << "\n";
  return png;
}

// ---- a demo-like report: the README's RMSNorm history, fusion lost on the 11th night ----

// Five steps of about `total` µs, ±1.5 % apart: each run's own noise.
v1::RunSummary DemoRun(const std::string& run_id, long long started,
                       const std::vector<std::pair<std::string, double>>& ops) {
  double total = 0;
  for (const auto& op : ops) total += op.second;
  v1::RunSummary run =
      StepRun(run_id, started, ops, 5, 19.0 * static_cast<double>(ops.size()), total);
  SetStepTimes(run, {total * 0.985, total * 1.01, total, total * 0.99, total * 1.015});
  return run;
}

SeriesReport DemoSeries(const std::string& workload, double before_us, double after_us,
                        int regress_night) {
  SeriesReport s;
  s.workload = workload;
  s.instance_type = "trn1.2xlarge";
  for (int night = 0; night < 14; ++night) {
    v1::RunInfo info;
    auto* id = info.mutable_identity();
    id->set_run_id(workload + "-night" + std::to_string(night));
    id->set_workload(workload);
    id->set_instance_type("trn1.2xlarge");
    id->set_device_kind(v1::DEVICE_KIND_NEURON);
    info.mutable_started_at()->set_seconds(kFirstNight + night * 86400);
    double noise = 1 + 0.006 * std::sin(night * 1.7);
    info.set_status(night == 6 ? v1::RUN_STATUS_FAILED : v1::RUN_STATUS_OK);
    info.set_status_reason(night == 6 ? "job timed out after 600 s" : "");
    info.set_device_us_per_step((night >= regress_night ? after_us : before_us) * noise);
    s.runs.push_back(info);
  }
  return s;
}

// The summaries of the series' OK nights, as GetRun returns them: `before` ops (one op at
// before_us when empty) until `regress_night`, then `after` with neuronx-cc 2.22.4.
void FetchNights(SeriesReport& s, const std::vector<std::pair<std::string, double>>& before,
                 const std::vector<std::pair<std::string, double>>& after, int regress_night) {
  for (const auto& info : s.runs) {
    if (info.status() != v1::RUN_STATUS_OK) continue;
    int night = static_cast<int>((info.started_at().seconds() - kFirstNight) / 86400);
    bool bad = night >= regress_night;
    auto ops = bad ? after : before;
    double total = 0;
    for (const auto& op : ops) total += op.second;
    for (auto& op : ops) op.second *= info.device_us_per_step() / total;  // as listed
    v1::RunSummary run = DemoRun(info.identity().run_id(), info.started_at().seconds(), ops);
    (*run.mutable_environment())["neuronx-cc"] = bad ? "2.22.4" : "2.21.18";
    s.recent.push_back(run);
  }
}

ModelReport DemoReport() {
  const std::vector<std::pair<std::string, double>> naive_ops = {
      {"aten::mul", 1164.5}, {"aten::add", 434.6}, {"aten::rsqrt", 415.0}, {"aten::mean", 340.8}};
  ModelReport report;
  report.model = "rmsnorm <4x512 bf16>";
  report.generated_at.set_seconds(kFirstNight + 14 * 86400);
  SeriesReport compiled = DemoSeries("compiled", 375.5, 375.5, 99);
  compiled.latest =
      DemoRun("compiled-night13", kFirstNight + 13 * 86400, {{"CompiledFunction", 375.5}});
  compiled.baseline =
      DemoRun("compiled-night12", kFirstNight + 12 * 86400, {{"CompiledFunction", 374.9}});
  compiled.baseline_label = "previous OK run";
  SeriesReport fused = DemoSeries("fused", 403.3, 2354.9, 10);
  fused.latest = DemoRun("fused-night13", kFirstNight + 13 * 86400, naive_ops);
  fused.baseline = DemoRun("fused-night9", kFirstNight + 9 * 86400, {{"aten::rms_norm", 403.3}});
  fused.baseline_label = "last good run of regression 1";
  SeriesReport naive = DemoSeries("naive", 2354.9, 2354.9, 99);
  naive.latest = DemoRun("naive-night13", kFirstNight + 13 * 86400, naive_ops);
  naive.baseline = DemoRun("naive-night12", kFirstNight + 12 * 86400, naive_ops);
  naive.baseline_label = "previous OK run";
  FetchNights(compiled, {{"CompiledFunction", 1}}, {{"CompiledFunction", 1}}, 99);
  FetchNights(fused, {{"aten::rms_norm", 1}}, naive_ops, 10);
  FetchNights(naive, naive_ops, naive_ops, 99);
  report.series = {compiled, fused, naive};

  report.regressions.push_back(
      MakeRegression({.id = 1,
                      .state = v1::REGRESSION_STATE_OPEN,
                      .model = report.model,
                      .workload = "fused",
                      .last_good_run_id = "fused-night9",
                      .first_bad_run_id = "fused-night10",
                      .first_bad_at = kFirstNight + 10 * 86400,
                      .relative_change = 2354.9 / 403.3 - 1,
                      .summary = "rmsnorm/fused on trn1.2xlarge: +483.9 % device time per step",
                      .compiler_before = "2.21.18",
                      .compiler_after = "2.22.4"}));
  return report;
}

class ReportRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kChromium, X_OK), 0)
        << kChromium << " is missing: install Debian's chromium package (deploy/install-deps.sh)";
  }
};

TEST_F(ReportRenderTest, BlankPageFailsTheCheck) {
  std::string png = Screenshot("<!DOCTYPE html><html><body></body></html>", "blank");
  ASSERT_FALSE(png.empty());
  auto image = DecodePng(png);
  ASSERT_TRUE(image.has_value()) << "cannot decode " << png;
  EXPECT_EQ(image->width, 1280);
  PageStats stats = Measure(*image);
  EXPECT_EQ(stats.distinct_colors, 1u);
  EXPECT_FALSE(LooksLikeAReport(stats));
  EXPECT_FALSE(ShowsTheV2Parts(stats));
}

TEST_F(ReportRenderTest, PageWithoutChartsFailsTheCheck) {
  std::string png = Screenshot(
      "<!DOCTYPE html><html><body><h1>devtime report: rmsnorm</h1><p>No charts here, only "
      "text in the default colours.</p></body></html>",
      "text-only");
  ASSERT_FALSE(png.empty());
  auto image = DecodePng(png);
  ASSERT_TRUE(image.has_value()) << "cannot decode " << png;
  PageStats stats = Measure(*image);
  EXPECT_GT(stats.distinct_colors, 1u);   // the text is there...
  EXPECT_FALSE(LooksLikeAReport(stats));  // ...but no chart, bar or regression
}

TEST_F(ReportRenderTest, ChromiumDrawsChartsBarsAndTheOpenRegression) {
  std::string png = Screenshot(RenderHtml(DemoReport()), "report");
  ASSERT_FALSE(png.empty());
  auto image = DecodePng(png);
  ASSERT_TRUE(image.has_value()) << "cannot decode " << png;
  EXPECT_EQ(image->width, 1280);
  EXPECT_EQ(image->height, 2000);
  PageStats stats = Measure(*image);
  EXPECT_TRUE(LooksLikeAReport(stats))
      << png << ": " << stats.distinct_colors << " colours, ink " << stats.ink << ", blue "
      << stats.line_blue << ", red " << stats.open_red;
}

// The "fused" series (third on the page) in full: a window tall enough for its charts. With
// DEVTIME_REPORT_SCREENSHOT=FILE the PNG is also copied to FILE (docs/report.png).
TEST_F(ReportRenderTest, ChromiumDrawsNoiseBandThresholdEnvironmentMarkerAndOperatorHistory) {
  ModelReport without_v2 = DemoReport();
  for (auto& s : without_v2.series) s.recent.clear();  // no band, markers or operator history
  without_v2.threshold = 0.0001;                       // the two lines merge into the data line
  std::string plain = Screenshot(RenderHtml(without_v2), "report-v1", 3000);
  ASSERT_FALSE(plain.empty());
  auto plain_image = DecodePng(plain);
  ASSERT_TRUE(plain_image.has_value());
  PageStats plain_stats = Measure(*plain_image);
  EXPECT_FALSE(ShowsTheV2Parts(plain_stats))
      << plain << ": band " << plain_stats.band << ", threshold " << plain_stats.threshold
      << ", env " << plain_stats.env << ", op line " << plain_stats.op_line;

  std::string png = Screenshot(RenderHtml(DemoReport()), "report-v2", 3000);
  ASSERT_FALSE(png.empty());
  auto image = DecodePng(png);
  ASSERT_TRUE(image.has_value()) << "cannot decode " << png;
  PageStats stats = Measure(*image);
  EXPECT_TRUE(LooksLikeAReport(stats));
  EXPECT_TRUE(ShowsTheV2Parts(stats))
      << png << ": band " << stats.band << ", threshold " << stats.threshold << ", env "
      << stats.env << ", op line " << stats.op_line;
  if (const char* copy = std::getenv("DEVTIME_REPORT_SCREENSHOT")) {
    std::ifstream in(png, std::ios::binary);
    std::ofstream out(copy, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
    EXPECT_TRUE(out.good()) << "cannot write " << copy;
  }
}

}  // namespace
}  // namespace devtime::ctl
