// Labelled, deterministic generator of device-time histories for the detector benchmarks
// (issue 5 item 7; protocol of reference §C.2, extended): per-series level, relative Gaussian
// across-run noise, steps (first index of the new level is the label), outlier runs, bimodal
// runs, missing nights, slow linear drift; each point also carries a within-run stddev.
// Own RNG (splitmix64 + Box-Muller) so the data are identical on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "services/collector/detect/detect.h"

namespace devtime::detect::bench {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();  // [0, 1)
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  double Gaussian();

 private:
  uint64_t state_;
  bool have_spare_ = false;
  double spare_ = 0.0;
};

struct Scenario {
  std::string name;
  size_t series = 200;
  size_t length = 300;
  size_t min_steps = 3, max_steps = 3;      // per series
  double step_lo = 0.05, step_hi = 0.05;    // relative step size; log-uniform between, random sign
  double noise_lo = 0.01, noise_hi = 0.01;  // relative across-run noise (per series)
  double outlier_rate = 0.0;                // runs multiplied by outlier_factor
  double outlier_factor = 1.3;
  double bimodal_rate = 0.0;  // runs in the slow mode: +2 sigma, doubled within-run noise
  double missing_rate = 0.0;  // missing nights (NaN)
  double drift_max = 0.0;     // |total linear drift over the series| <= drift_max
  size_t min_gap = 15;        // between steps, and from both ends
  uint64_t seed = 1;
};

struct LabelledSeries {
  std::vector<Point> points;
  std::vector<size_t> changes;  // first valid index of each new level
};

std::vector<LabelledSeries> Generate(const Scenario& scenario);

struct Score {
  size_t true_positives = 0, false_positives = 0, false_negatives = 0;
  size_t points = 0;  // valid points scored
  double Precision() const;
  double Recall() const;
  double F1() const;
  double FalsePer10k() const;  // false positives per 10,000 points
  void Add(const std::vector<size_t>& truth, const std::vector<size_t>& found, size_t margin);
};

}  // namespace devtime::detect::bench
