// Labelled, deterministic generator of device-time histories for the detector benchmarks
// (issue 5 item 7; protocol of reference §C.2, extended): per-series level, relative Gaussian
// across-run noise, steps (first index of the new level is the label), outlier runs, bimodal
// runs, missing nights, slow linear drift; shapes that are not steps (issue 13): a labelled
// drift (a linear creep from a start run to the end), a seasonal cycle, a random-walk level;
// short series. Each point also carries a within-run stddev.
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
  double drift_max = 0.0;     // |total linear drift over the series| <= drift_max (unlabelled)
  // Labelled drift: a creep of total relative size log-uniform in [lo, hi] (random sign) over
  // the last uniform [runs_lo, runs_hi] runs of the series (0 = none).
  double labelled_drift_lo = 0.0, labelled_drift_hi = 0.0;
  size_t drift_runs_lo = 100, drift_runs_hi = 300;
  // Signs (issue 21): +1 or -1 fixes the sign of every step / of the labelled drift (0 =
  // random). A drift that turns: the creep runs over the FIRST drift runs and the level then
  // stays (a trend's turning point), instead of over the last ones.
  int step_sign = 0, drift_sign = 0;
  bool drift_turns = false;
  // A creep the other way before the labelled one (a V, or an improvement that turned into a
  // regression): over the runs before it the level moves by -counter_creep x the labelled
  // drift's size (0 = none).
  double counter_creep = 0.0;
  // An excursion: the level times (1 + excursion) for excursion_runs runs at a random place at
  // least min_gap runs from both ends, then back; both edges are labelled changes (0 = none;
  // use with no other steps).
  double excursion = 0.0;
  size_t excursion_runs = 90;
  // Seasonal cycle: level x (1 + amplitude x sin(2 pi i / period + random phase)) (0 = none).
  size_t season_period = 0;
  double season_amplitude = 0.0;
  // Random-walk level: each run moves the level by N(0, random_walk) relatively (0 = none).
  double random_walk = 0.0;
  // Series length uniform in [length, length_hi] (0 = always `length`).
  size_t length_hi = 0;
  size_t min_gap = 15;  // between steps, and from both ends
  uint64_t seed = 1;

  // Chainable setters, so that a benchmark's scenario table reads one line per scenario.
  Scenario& Steps(size_t lo, size_t hi) { return Set(min_steps, max_steps, lo, hi); }
  Scenario& StepSize(double lo, double hi) { return Set(step_lo, step_hi, lo, hi); }
  Scenario& Noise(double lo, double hi) { return Set(noise_lo, noise_hi, lo, hi); }
  Scenario& LabelledDrift(double lo, double hi) {
    return Set(labelled_drift_lo, labelled_drift_hi, lo, hi);
  }
  Scenario& Lengths(size_t lo, size_t hi) { return Set(length, length_hi, lo, hi); }
  Scenario& Signs(int steps, int drift) {
    step_sign = steps;
    drift_sign = drift;
    return *this;
  }
  Scenario& Excursion(double size, size_t runs) {
    excursion = size;
    excursion_runs = runs;
    return *this;
  }
  Scenario& Season(size_t period, double amplitude) {
    season_period = period;
    season_amplitude = amplitude;
    return *this;
  }
  // Outlier runs, bimodal runs and missing nights (rates).
  Scenario& Dirt(double outliers, double bimodal, double missing) {
    outlier_rate = outliers;
    bimodal_rate = bimodal;
    missing_rate = missing;
    return *this;
  }
  // Sets a (lo, hi) pair of fields.
  template <typename T>
  Scenario& Set(T& lo_field, T& hi_field, T lo, T hi) {
    lo_field = lo;
    hi_field = hi;
    return *this;
  }
};

struct LabelledSeries {
  std::vector<Point> points;
  std::vector<size_t> changes;  // first valid index of each new level
  // Labelled drift: first index of the creep and its total relative size (0 = none).
  size_t drift_start = 0;
  double drift_total = 0.0;
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
