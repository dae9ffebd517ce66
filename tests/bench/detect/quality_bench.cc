// Detection quality of the default detector and the Otava reference mode, side by side
// (issue 5 item 7). Usage: detect_quality_bench [--series N] [--seed-base S] [--smoke]
// --seed-base shifts every scenario's seed (scenario k uses S + k; default S = 1), so a change
// can be checked on data it was not tuned on.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "services/collector/detect/detect.h"
#include "tests/bench/detect/generator.h"

namespace {

using devtime::detect::DetectorOptions;
using devtime::detect::Mode;
using devtime::detect::bench::Generate;
using devtime::detect::bench::Scenario;
using devtime::detect::bench::Score;

struct Row {
  Scenario scenario;
  const char* target;  // what the issue asks, for the printout
};

Score Evaluate(const Scenario& scenario, Mode mode) {
  DetectorOptions options;
  options.mode = mode;
  Score score;
  for (const auto& series : Generate(scenario)) {
    const auto cps = devtime::detect::Detect(series.points, options);
    if (!cps.ok()) {
      std::fprintf(stderr, "detect failed: %s\n", std::string(cps.status().message()).c_str());
      std::exit(1);
    }
    std::vector<size_t> found;
    for (const auto& cp : *cps) found.push_back(cp.index);
    score.Add(series.changes, found, 2);
    for (const auto& p : series.points) score.points += std::isfinite(p.value) ? 1 : 0;
  }
  return score;
}

}  // namespace

int main(int argc, char** argv) {
  size_t series = 200;
  uint64_t seed_base = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) series = 5;
    if (std::strcmp(argv[i], "--series") == 0 && i + 1 < argc)
      series = std::strtoul(argv[++i], nullptr, 10);
    if (std::strcmp(argv[i], "--seed-base") == 0 && i + 1 < argc)
      seed_base = std::strtoull(argv[++i], nullptr, 10);
  }
  std::vector<Row> rows;
  auto add = [&](const char* name, const char* target, auto&& tweak) {
    Scenario s;
    s.name = name;
    s.series = series;
    s.seed = seed_base + rows.size();
    tweak(s);
    rows.push_back({s, target});
  };
  add("2% step, 1% noise", "recall >= 0.90", [](Scenario& s) { s.step_lo = s.step_hi = 0.02; });
  add("5% step, 1% noise", "F1 >= 0.97", [](Scenario&) {});
  add("5% step, 2% noise", "", [](Scenario& s) { s.noise_lo = s.noise_hi = 0.02; });
  add("5% step, 1% noise, 2% outlier runs", "F1 >= 0.90",
      [](Scenario& s) { s.outlier_rate = 0.02; });
  add("5% step, 1% noise, 30% bimodal runs", "", [](Scenario& s) { s.bimodal_rate = 0.3; });
  add("5% step, 1% noise, 10% missing nights", "", [](Scenario& s) { s.missing_rate = 0.1; });
  add("1% step, 0.5% noise", "", [](Scenario& s) {
    s.step_lo = s.step_hi = 0.01;
    s.noise_lo = s.noise_hi = 0.005;
  });
  // The mixed fleets: 1-5 steps of [step_lo, step_hi] at [0.5 %, noise_hi] noise, with
  // outliers, bimodal runs, missing nights and a slow drift.
  auto mix = [](double step_lo, double step_hi, double noise_hi) {
    return [=](Scenario& s) {
      s.min_steps = 1;
      s.max_steps = 5;
      s.step_lo = step_lo;
      s.step_hi = step_hi;
      s.noise_lo = 0.005;
      s.noise_hi = noise_hi;
      s.outlier_rate = 0.01;
      s.bimodal_rate = 0.1;
      s.missing_rate = 0.05;
      s.drift_max = 0.01;
    };
  };
  add("mix: 1-50% steps, 0.5-5% noise, 1-5 steps, outliers, bimodal, missing, drift", "",
      mix(0.01, 0.5, 0.05));
  add("mix, only steps >= 3x noise (10-50% steps, 0.5-3% noise)", "", mix(0.1, 0.5, 0.03));
  add("stationary, 1% noise", "<= 1 FP / 10k points",
      [](Scenario& s) { s.min_steps = s.max_steps = 0; });
  add("stationary, 0.5-5% noise, 2% outliers, 10% bimodal, 5% missing", "<= 1 FP / 10k points",
      [](Scenario& s) {
        s.min_steps = s.max_steps = 0;
        s.noise_lo = 0.005;
        s.noise_hi = 0.05;
        s.outlier_rate = 0.02;
        s.bimodal_rate = 0.1;
        s.missing_rate = 0.05;
      });
  add("stationary + slow drift (<= 1% over the series)", "", [](Scenario& s) {
    s.min_steps = s.max_steps = 0;
    s.drift_max = 0.01;
  });

  std::printf(
      "Detection quality: %zu series x 300 runs per scenario, +-2 runs margin, seed base %llu\n",
      series, static_cast<unsigned long long>(seed_base));
  std::printf("%-70s %-8s %5s %5s %5s %8s  %s\n", "scenario", "mode", "P", "R", "F1", "FP/10k",
              "target");
  for (const Row& row : rows) {
    for (Mode mode : {Mode::kDefault, Mode::kOtava}) {
      const Score s = Evaluate(row.scenario, mode);
      std::printf("%-70s %-8s %5.3f %5.3f %5.3f %8.2f  %s\n", row.scenario.name.c_str(),
                  mode == Mode::kDefault ? "default" : "otava", s.Precision(), s.Recall(), s.F1(),
                  s.FalsePer10k(), mode == Mode::kDefault ? row.target : "");
    }
  }
  return 0;
}
