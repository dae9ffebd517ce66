// Detector speed (issue 5 item 8), default mode vs the Otava reference mode in the same run:
//  - full analysis of one 10,000-point series (1 % of the runs are 5 % steps, 1 % noise), and
//    the same with drift findings (Analyze);
//  - Detector::Append of one point to a 10,000-point history;
//  - re-analysing a fleet of series x 365 points on two threads, measured on a fraction and
//    extrapolated to 100,000 series.
// Usage: detect_speed_bench [--smoke] [--fleet N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "services/collector/detect/detect.h"
#include "tests/bench/detect/generator.h"

namespace {

using devtime::detect::Detector;
using devtime::detect::DetectorOptions;
using devtime::detect::Mode;
using devtime::detect::Point;
using devtime::detect::bench::Generate;
using devtime::detect::bench::Scenario;
using Clock = std::chrono::steady_clock;

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU time of the calling thread, less sensitive than wall time on a shared machine.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

DetectorOptions OptionsFor(Mode mode) {
  DetectorOptions options;
  options.mode = mode;
  return options;
}

// Median time of `analyse(points, options)`, which returns a StatusOr of a vector of results.
template <typename Analyse>
double FullAnalysisMs(const std::vector<Point>& points, Mode mode, int repeats, const char* what,
                      Analyse analyse) {
  std::vector<double> times, cpu;
  size_t found = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    const double cpu_start = ThreadCpuMs();
    const auto results = analyse(points, OptionsFor(mode));
    cpu.push_back(ThreadCpuMs() - cpu_start);
    times.push_back(Millis(Clock::now() - start));
    found = results.ok() ? results->size() : 0;
  }
  std::printf("  %-8s %s of %zu points: %9.3f ms wall, %9.3f ms CPU (median of %d; %zu found)\n",
              mode == Mode::kDefault ? "default" : "otava", what, points.size(), Median(times),
              Median(cpu), repeats, found);
  return Median(times);
}

double FullAnalysisMs(const std::vector<Point>& points, Mode mode, int repeats) {
  return FullAnalysisMs(points, mode, repeats, "full analysis (Detect)",
                        [](const std::vector<Point>& p, const DetectorOptions& o) {
                          return devtime::detect::Detect(p, o);
                        });
}

double AppendMs(const std::vector<Point>& points, Mode mode, int repeats) {
  std::vector<double> times;
  auto detector = Detector::Create(OptionsFor(mode));
  for (int r = 0; r < repeats; ++r) {
    detector->Reset(std::span<const Point>(points).first(points.size() - 1));
    const auto start = Clock::now();
    detector->Append(points.back());
    times.push_back(Millis(Clock::now() - start));
  }
  std::printf("  %-8s append 1 point to %zu:          %9.3f ms (median of %d)\n",
              mode == Mode::kDefault ? "default" : "otava", points.size() - 1, Median(times),
              repeats);
  return Median(times);
}

double FleetSeconds(const std::vector<std::vector<Point>>& fleet, Mode mode, size_t target) {
  const DetectorOptions options = OptionsFor(mode);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  std::vector<size_t> found(2, 0);
  for (size_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < fleet.size(); i += 2) {
        const auto cps = devtime::detect::Detect(fleet[i], options);
        found[t] += cps.ok() ? cps->size() : 0;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double seconds = Millis(Clock::now() - start) / 1000.0;
  const double extrapolated =
      seconds * static_cast<double>(target) / static_cast<double>(fleet.size());
  std::printf(
      "  %-8s %zu series x 365 on 2 threads: %8.3f s -> %zu series: %8.2f s (extrapolated)\n",
      mode == Mode::kDefault ? "default" : "otava", fleet.size(), seconds, target, extrapolated);
  return extrapolated;
}

}  // namespace

int main(int argc, char** argv) {
  bool smoke = false;
  size_t fleet_size = 4000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) smoke = true;
    if (std::strcmp(argv[i], "--fleet") == 0 && i + 1 < argc)
      fleet_size = std::strtoul(argv[++i], nullptr, 10);
  }
  const size_t length = smoke ? 1000 : 10000;
  if (smoke) fleet_size = 20;

  Scenario big;
  big.name = "speed";
  big.series = 1;
  big.length = length;
  big.min_steps = big.max_steps = length / 100;
  big.min_gap = 15;
  big.seed = 42;
  const std::vector<Point> points = Generate(big).front().points;

  Scenario mix;
  mix.name = "fleet";
  mix.series = fleet_size;
  mix.length = 365;
  mix.Steps(0, 3).StepSize(0.02, 0.5).Noise(0.005, 0.05).Dirt(0.01, 0, 0.03);
  mix.seed = 7;
  std::vector<std::vector<Point>> fleet;
  for (auto& s : Generate(mix)) fleet.push_back(std::move(s.points));

  std::printf(
      "Detector speed (targets: full 10,000 <= 10 ms, append <= 1 ms, 100,000 x 365 <= 60 s)\n");
  const double full_default = FullAnalysisMs(points, Mode::kDefault, smoke ? 3 : 21);
  const double full_otava = FullAnalysisMs(points, Mode::kOtava, smoke ? 1 : 3);
  FullAnalysisMs(points, Mode::kDefault, smoke ? 3 : 21, "steps + drifts (Analyze)",
                 [](const std::vector<Point>& p, const DetectorOptions& o) {
                   return devtime::detect::Analyze(p, o);
                 });
  const double append_default = AppendMs(points, Mode::kDefault, smoke ? 3 : 21);
  const double append_otava = AppendMs(points, Mode::kOtava, smoke ? 1 : 3);
  const double fleet_default = FleetSeconds(fleet, Mode::kDefault, 100000);
  std::vector<std::vector<Point>> otava_fleet(
      fleet.begin(), fleet.begin() + static_cast<std::ptrdiff_t>(
                                         std::min<size_t>(fleet.size(), smoke ? 20 : 1000)));
  const double fleet_otava = FleetSeconds(otava_fleet, Mode::kOtava, 100000);
  std::printf("Ratios otava / default: full %.1fx, append %.1fx, fleet %.1fx\n",
              full_otava / full_default, append_otava / append_default,
              fleet_otava / fleet_default);
  return 0;
}
