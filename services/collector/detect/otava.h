// Reference mode: a C++ port of Apache Otava 0.8's change-point analysis (reference §B.1–B.6),
// kept bug-compatible so that Otava's golden vectors reproduce (the merge step's stale
// neighbour statistics included, behind `upstream_merge_quirk`). Used for side-by-side
// comparison with the default detector; not the production path.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace devtime::detect::otava {

struct Options {
  size_t window = 50;         // Otava CLI default
  double max_pvalue = 0.001;  // Otava CLI default
  double min_magnitude = 0.0;
  bool upstream_merge_quirk = true;  // recompute k and k+1 after deleting k, as upstream does
};

// One change point with Otava's statistics (std with ddof = 0, as upstream).
struct ChangePoint {
  size_t index = 0;  // first index of the new regime
  double q_hat = 0.0;
  double p_value = 1.0;
  double t_statistic = 0.0;
  double mean_before = 0.0;
  double mean_after = 0.0;
  double std_before = 0.0;
  double std_after = 0.0;
  size_t count_before = 0;
  size_t count_after = 0;
  double ForwardChange() const;  // mean_after / mean_before - 1 (0 if mean_before == 0)
  double Magnitude() const;      // max(|forward|, |backward|)
};

// Otava's `fill_missing`: NaN forward-filled, leading NaNs back-filled.
void FillMissing(std::vector<double>& series);

// compute_change_points(series, window_len, max_pvalue, min_magnitude): split with the weak
// p-value, then merge. Series must be NaN-free (see FillMissing).
std::vector<ChangePoint> ComputeChangePoints(std::span<const double> series,
                                             const Options& options);
// Only the split step (the weak change points, stats recomputed between weak neighbours).
std::vector<ChangePoint> Split(std::span<const double> series, size_t window, double pvalue);

// ChangePointDetector with the t-test tester over the whole series (no windows).
std::vector<ChangePoint> DivisiveTTest(std::span<const double> series, double max_pvalue);

// `--orig-edivisive`: Matteson-James with `permutations` shuffles inside the intervals,
// p = c / (R + 1). Deterministic for a seed, but not Python's random stream.
std::vector<ChangePoint> DivisivePermutation(std::span<const double> series, double max_pvalue,
                                             int permutations, uint64_t seed);

}  // namespace devtime::detect::otava
