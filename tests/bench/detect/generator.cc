#include "tests/bench/detect/generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace devtime::detect::bench {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Gaussian() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  const double u1 = std::max(Uniform(), 1e-300);
  const double u2 = Uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  have_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

std::vector<LabelledSeries> Generate(const Scenario& s) {
  Rng rng(s.seed * 0x2545F4914F6CDD1DULL + 17);
  std::vector<LabelledSeries> all;
  all.reserve(s.series);
  for (size_t k = 0; k < s.series; ++k) {
    LabelledSeries out;
    const size_t length =
        s.length_hi > s.length
            ? s.length + static_cast<size_t>(rng.Uniform() *
                                             static_cast<double>(s.length_hi - s.length + 1))
            : s.length;
    const size_t steps =
        s.min_steps +
        static_cast<size_t>(rng.Uniform() * static_cast<double>(s.max_steps - s.min_steps + 1));
    // Step positions: uniform, at least min_gap apart and from both ends (rejection).
    std::vector<size_t> at;
    // An excursion's edges are its two steps (out and back), drawn before any other.
    size_t excursion_from = length, excursion_to = length;
    if (s.excursion != 0.0 && length > 2 * s.min_gap + s.excursion_runs) {
      excursion_from =
          s.min_gap +
          static_cast<size_t>(rng.Uniform() *
                              static_cast<double>(length - 2 * s.min_gap - s.excursion_runs));
      excursion_to = excursion_from + s.excursion_runs;
    }
    for (int attempt = 0; attempt < 1000 && at.size() < steps && length > 2 * s.min_gap;
         ++attempt) {
      const size_t p = s.min_gap + static_cast<size_t>(rng.Uniform() *
                                                       static_cast<double>(length - 2 * s.min_gap));
      bool ok = true;
      for (size_t q : at) ok = ok && (p > q ? p - q : q - p) >= s.min_gap;
      if (ok) at.push_back(p);
    }
    std::sort(at.begin(), at.end());
    const double noise = s.noise_lo * std::pow(s.noise_hi / s.noise_lo, rng.Uniform());
    const double within = rng.Uniform(0.01, 0.04);  // within-run stddev (relative)
    const double drift = s.drift_max * rng.Uniform(-1.0, 1.0);
    size_t creep_start = length, creep_end = length;
    double creep = 0.0;
    if (s.labelled_drift_hi > 0.0) {
      const size_t runs = std::min(
          length, s.drift_runs_lo + static_cast<size_t>(rng.Uniform() *
                                                        static_cast<double>(s.drift_runs_hi -
                                                                            s.drift_runs_lo + 1)));
      creep_start = s.drift_turns ? 0 : length - runs;
      creep_end = s.drift_turns ? runs : length;
      creep =
          s.labelled_drift_lo * std::pow(s.labelled_drift_hi / s.labelled_drift_lo, rng.Uniform());
      const bool down = s.drift_sign != 0 ? s.drift_sign < 0 : rng.Uniform() < 0.5;
      if (down) creep = -creep / (1.0 + creep);
      out.drift_start = creep_start;
      out.drift_total = creep;
    }
    // Drawn only when used, so that the other scenarios' data stay as they were.
    const double phase = s.season_period > 0 ? 2.0 * std::numbers::pi * rng.Uniform() : 0.0;
    double walk = 1.0;
    double level = 50.0 * std::pow(100.0, rng.Uniform());  // 50 us .. 5 ms per step
    size_t next = 0;
    out.points.resize(length);
    bool pending_label = false;
    for (size_t i = 0; i < length; ++i) {
      if (next < at.size() && at[next] == i) {
        const double size = s.step_lo * std::pow(s.step_hi / s.step_lo, rng.Uniform());
        const bool up = s.step_sign != 0 ? (rng.Uniform(), s.step_sign > 0) : rng.Uniform() < 0.5;
        level *= up ? 1.0 + size : 1.0 / (1.0 + size);
        ++next;
        pending_label = true;
      }
      if (s.random_walk > 0.0) walk *= 1.0 + s.random_walk * rng.Gaussian();
      double shape = walk * (1.0 + drift * static_cast<double>(i) / static_cast<double>(length));
      if (s.counter_creep > 0.0 && creep_start > 0) {
        const size_t into = std::min(i + 1, creep_start);
        shape *= 1.0 - s.counter_creep * creep * static_cast<double>(into) /
                           static_cast<double>(creep_start);
      }
      if (i >= creep_start) {
        const size_t into = std::min(i, creep_end - 1) - creep_start + 1;
        shape *=
            1.0 + creep * static_cast<double>(into) / static_cast<double>(creep_end - creep_start);
      }
      if (i == excursion_from || i == excursion_to) pending_label = true;
      if (i >= excursion_from && i < excursion_to) shape *= 1.0 + s.excursion;
      if (s.season_period > 0) {
        shape *=
            1.0 + s.season_amplitude * std::sin(2.0 * std::numbers::pi * static_cast<double>(i) /
                                                    static_cast<double>(s.season_period) +
                                                phase);
      }
      const double base = level * shape;
      double value = base * (1.0 + noise * rng.Gaussian());
      double run_noise = base * within * rng.Uniform(0.8, 1.25);
      if (rng.Uniform() < s.bimodal_rate) {
        value += 2.0 * noise * base;
        run_noise *= 2.0;
      }
      if (rng.Uniform() < s.outlier_rate) value *= s.outlier_factor;
      const bool missing = rng.Uniform() < s.missing_rate;
      Point& p = out.points[i];
      p.value = missing ? std::numeric_limits<double>::quiet_NaN() : value;
      p.noise = run_noise;
      if (!missing && pending_label) {
        out.changes.push_back(i);
        pending_label = false;
      }
    }
    all.push_back(std::move(out));
  }
  return all;
}

double Score::Precision() const {
  const size_t found = true_positives + false_positives;
  return found ? static_cast<double>(true_positives) / static_cast<double>(found) : 1.0;
}
double Score::Recall() const {
  const size_t real = true_positives + false_negatives;
  return real ? static_cast<double>(true_positives) / static_cast<double>(real) : 1.0;
}
double Score::F1() const {
  const double p = Precision(), r = Recall();
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}
double Score::FalsePer10k() const {
  return points ? 1e4 * static_cast<double>(false_positives) / static_cast<double>(points) : 0.0;
}

void Score::Add(const std::vector<size_t>& truth, const std::vector<size_t>& found, size_t margin) {
  // Greedy one-to-one: each detection takes the nearest unmatched label within the margin.
  std::vector<bool> used(truth.size(), false);
  for (size_t f : found) {
    size_t best = truth.size();
    size_t best_distance = margin + 1;
    for (size_t t = 0; t < truth.size(); ++t) {
      const size_t d = f > truth[t] ? f - truth[t] : truth[t] - f;
      if (!used[t] && d < best_distance) {
        best = t;
        best_distance = d;
      }
    }
    if (best < truth.size()) {
      used[best] = true;
      ++true_positives;
    } else {
      ++false_positives;
    }
  }
  for (bool u : used) false_negatives += u ? 0 : 1;
}

}  // namespace devtime::detect::bench
