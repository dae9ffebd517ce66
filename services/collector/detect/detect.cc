#include "services/collector/detect/detect.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <utility>

#include "services/collector/detect/otava.h"
#include "services/collector/detect/stats.h"

namespace devtime::detect {
namespace {

constexpr double kMadToSigma = 1.4826;

// The valid (non-NaN) runs of a span of points, with their input indices.
struct Valid {
  std::vector<double> values;
  std::vector<double> noise;  // NaN where unknown
  std::vector<size_t> index;  // input index of each valid run
};

Valid CollectValid(std::span<const Point> points, size_t offset) {
  Valid valid;
  valid.values.reserve(points.size());
  valid.noise.reserve(points.size());
  valid.index.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i].value)) continue;
    valid.values.push_back(points[i].value);
    valid.noise.push_back(points[i].noise);
    valid.index.push_back(offset + i);
  }
  return valid;
}

// Robust across-run sigma: MAD of first differences (insensitive to steps and to single
// outliers), falling back to the MAD of the values, then to a tiny scale.
double RobustSigma(std::span<const double> x, std::vector<double>& scratch) {
  if (x.size() >= 3) {
    scratch.clear();
    for (size_t i = 1; i < x.size(); ++i) scratch.push_back(std::fabs(x[i] - x[i - 1]));
    const double sigma = kMadToSigma * MedianInPlace(scratch) / std::numbers::sqrt2;
    if (sigma > 0.0) return sigma;
  }
  scratch.assign(x.begin(), x.end());
  const double median = x.empty() ? 0.0 : MedianInPlace(scratch);
  scratch.clear();
  for (double v : x) scratch.push_back(std::fabs(v - median));
  const double mad = scratch.empty() ? 0.0 : kMadToSigma * MedianInPlace(scratch);
  if (mad > 0.0) return mad;
  return 1e-9 * std::max(1.0, std::fabs(median));
}

// Median of up to k values of x on one side of i (excluding i); NaN when none.
double SideMedian(std::span<const double> x, size_t i, size_t k, bool left,
                  std::vector<double>& scratch) {
  if (k == 3 && (left ? i >= 3 : i + 3 < x.size())) {  // the default: no allocation, no sort
    const double a = left ? x[i - 1] : x[i + 1];
    const double b = left ? x[i - 2] : x[i + 2];
    const double c = left ? x[i - 3] : x[i + 3];
    return std::max(std::min(a, b), std::min(std::max(a, b), c));
  }
  scratch.clear();
  if (left) {
    for (size_t j = i; j > 0 && scratch.size() < k; --j) scratch.push_back(x[j - 1]);
  } else {
    for (size_t j = i + 1; j < x.size() && scratch.size() < k; ++j) scratch.push_back(x[j]);
  }
  return MedianInPlace(scratch);
}

// Replaces isolated outliers (see header). The first and the last run have neighbours on one
// side only; either is replaced when it stands out from the median of its j = min(k,
// 2 x min_segment - 3) nearest runs. That cannot remove a reportable level: a run that shares
// a segment of min_segment runs with its neighbours has min_segment - 1 of them, a majority of
// those j, within the limit, and then so is their median. Without this, one spike among the
// first or last min_segment runs makes a short edge segment whose mean the spike carries
// (a 30 % spike moves a 3-run mean by 10 %), and the pooled t-test, whose variance comes
// from the long side, reports it.
std::vector<double> ReplaceOutliers(std::span<const double> x, double sigma,
                                    const DetectorOptions& options, std::vector<double>& scratch) {
  std::vector<double> clean(x.begin(), x.end());
  if (options.outlier_threshold <= 0.0 || options.outlier_neighbours == 0 || x.size() < 3) {
    return clean;
  }
  const double limit = options.outlier_threshold * sigma;
  const size_t k = options.outlier_neighbours;
  // min_segment 1: a single edge run may be a level of its own; never replaced.
  const size_t edge_neighbours =
      options.min_segment >= 2 ? std::min(k, 2 * options.min_segment - 3) : 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool first = i == 0, last = i + 1 == x.size();
    if (first || last) {
      if (edge_neighbours == 0 || x.size() <= edge_neighbours) continue;
      const double side = SideMedian(x, i, edge_neighbours, last, scratch);
      if (std::fabs(x[i] - side) <= limit) continue;
      clean[i] = side;
      continue;
    }
    const double right = SideMedian(x, i, k, false, scratch);
    const double dr = x[i] - right;
    if (std::fabs(dr) <= limit) continue;
    const double left = SideMedian(x, i, k, true, scratch);
    const double dl = x[i] - left;
    if (std::fabs(dl) <= limit || (dl > 0) != (dr > 0)) continue;
    scratch.clear();
    for (size_t j = i > k ? i - k : 0; j < std::min(x.size(), i + k + 1); ++j) {
      if (j != i) scratch.push_back(x[j]);
    }
    clean[i] = MedianInPlace(scratch);
  }
  return clean;
}

// shift >= ratio x median of the known (finite, > 0) noise values; true when none is known.
// The same decision as comparing with MedianInPlace of those values, bit for bit, in one
// counting pass and without copying: with f(x) = ratio * x (monotone also when rounded) and
// h = known / 2, the median is the h-th smallest value (odd count; 0-based) or the mean of
// the (h-1)-th and h-th (even count), and
//   #{f(x) <= shift} >= h + 1  ->  f(h-th) <= shift, and then f(median) <= shift too;
//   #{f(x) <= shift} <= h - 1  ->  f((h-1)-th) > shift, so f(median) > shift;
//   #{f(x) <= shift} == h (even count only decides here) -> (h-1)-th = the largest value with
//   f(x) <= shift, h-th = the smallest with f(x) > shift: the median is computed from them.
bool AtLeastRatioTimesMedian(std::span<const double> noise, double ratio, double shift) {
  size_t known = 0, below = 0;
  double largest_below = 0.0;
  double smallest_above = std::numeric_limits<double>::infinity();
  for (double x : noise) {
    if (!(std::isfinite(x) && x > 0.0)) continue;
    ++known;
    if (ratio * x <= shift) {
      ++below;
      largest_below = std::max(largest_below, x);
    } else {
      smallest_above = std::min(smallest_above, x);
    }
  }
  if (known == 0) return true;
  const size_t half = known / 2;
  if (below >= half + 1) return true;
  if (known % 2 == 1 || below + 1 <= half) return false;
  return shift >= ratio * (0.5 * (largest_below + smallest_above));
}

// The default detector on the valid runs of one region.
class Analysis {
 public:
  Analysis(const Valid& valid, const DetectorOptions& options) : valid_(valid), options_(options) {
    const auto& x = valid_.values;
    sigma_ = RobustSigma(x, scratch_);
    const std::vector<double> clean = ReplaceOutliers(x, sigma_, options_, scratch_);
    scratch_.assign(clean.begin(), clean.end());
    center_ = MedianInPlace(scratch_);
    u_.resize(clean.size());
    prefix_.assign(clean.size() + 1, 0.0L);
    prefix_squares_.assign(clean.size() + 1, 0.0L);
    for (size_t i = 0; i < clean.size(); ++i) {
      u_[i] = (clean[i] - center_) / sigma_;
      prefix_[i + 1] = prefix_[i] + u_[i];
      prefix_squares_[i + 1] = prefix_squares_[i] + static_cast<long double>(u_[i]) * u_[i];
    }
  }

  // Change points as positions in the valid runs (segment starts), sorted.
  std::vector<ChangePoint> Run() {
    const size_t n = u_.size();
    const size_t m = std::max<size_t>(1, options_.min_segment);
    std::vector<size_t> taus;
    std::vector<double> q_hats(n, 0.0);
    struct Job {
      size_t a, b;
      std::vector<uint32_t> sorted;  // a..b-1 ordered by value
    };
    std::vector<Job> jobs;
    if (n >= 2 * m) {
      Job all{0, n, std::vector<uint32_t>(n)};
      for (size_t i = 0; i < n; ++i) all.sorted[i] = static_cast<uint32_t>(i);
      std::sort(all.sorted.begin(), all.sorted.end(),
                [this](uint32_t x, uint32_t y) { return u_[x] < u_[y]; });
      jobs.push_back(std::move(all));
    }
    // Binary segmentation; when an interval's best split fails, its halves are explored
    // (with a stricter threshold per level) so that changes that cancel out over the whole
    // interval (up, then down) are still found.
    while (!jobs.empty()) {
      Job job = std::move(jobs.back());
      jobs.pop_back();
      const auto candidate = BestSplitKappaFixed(u_, job.a, job.b, m, job.sorted, energy_);
      if (!candidate) continue;
      std::optional<size_t> tau;
      if (Passes(Test(job.a, candidate->tau, job.b), options_.max_pvalue)) {
        tau = candidate->tau;
      } else {
        tau = Explore(job.a, job.b, job.sorted, candidate->tau, 1);
      }
      if (!tau) continue;
      taus.push_back(*tau);
      q_hats[*tau] = candidate->tau == *tau ? candidate->q_hat : 0.0;
      auto [left, right] = Partition(job.sorted, *tau);
      jobs.push_back({job.a, *tau, std::move(left)});
      jobs.push_back({*tau, job.b, std::move(right)});
    }
    std::sort(taus.begin(), taus.end());
    // Prune: re-test each change point between its neighbours; drop the weakest failure.
    while (!taus.empty()) {
      size_t weakest = taus.size();
      double weakest_score = -1.0;
      for (size_t i = 0; i < taus.size(); ++i) {
        const SideTest test = Test(Before(taus, i), taus[i], After(taus, i, n));
        if (Passes(test, options_.max_pvalue)) continue;
        const double score = test.p_value <= options_.max_pvalue ? 2.0 : test.p_value;
        if (score > weakest_score) {
          weakest_score = score;
          weakest = i;
        }
      }
      if (weakest == taus.size()) break;
      taus.erase(taus.begin() + static_cast<std::ptrdiff_t>(weakest));
    }
    // Refine each position to the strongest mean shift between its neighbours (+-3 runs).
    for (size_t i = 0; i < taus.size(); ++i) {
      const size_t a = Before(taus, i), b = After(taus, i, n);
      size_t best = taus[i];
      double best_t = ShiftT(a, best, b);
      const size_t lo = std::max(a + m, taus[i] > 3 ? taus[i] - 3 : 0);
      const size_t hi = std::min(b - m, taus[i] + 3);
      for (size_t t = lo; t <= hi; ++t) {
        const double value = ShiftT(a, t, b);
        if (value > best_t) {
          best_t = value;
          best = t;
        }
      }
      if (best != taus[i]) {
        q_hats[best] = q_hats[taus[i]];
        taus[i] = best;
      }
    }
    std::vector<ChangePoint> result;
    for (size_t i = 0; i < taus.size(); ++i) {
      const size_t a = Before(taus, i), b = After(taus, i, n);
      const SideTest test = Test(a, taus[i], b);
      ChangePoint cp;
      cp.index = valid_.index[taus[i]];
      cp.previous_index = valid_.index[taus[i] - 1];
      cp.before_mean = test.before_mean;
      cp.after_mean = test.after_mean;
      cp.before_stddev = test.before_stddev;
      cp.after_stddev = test.after_stddev;
      cp.before_count = taus[i] - a;
      cp.after_count = b - taus[i];
      cp.relative_change = test.relative_change;
      cp.t_statistic = test.t;
      cp.p_value = test.p_value;
      cp.confidence = 1.0 - test.p_value;
      cp.q_hat = q_hats[taus[i]];
      result.push_back(cp);
    }
    return result;
  }

 private:
  struct SideTest {
    double t = 0.0;
    double p_value = 1.0;
    double before_mean = 0.0;
    double after_mean = 0.0;
    double before_stddev = 0.0;
    double after_stddev = 0.0;
    double relative_change = 0.0;
    bool effect_ok = false;
  };

  // |t| of the split (as in Test), without p-values: for position refinement.
  double ShiftT(size_t a, size_t tau, size_t b) const {
    const double n1 = static_cast<double>(tau - a), n2 = static_cast<double>(b - tau);
    const long double s1 = prefix_[tau] - prefix_[a], s2 = prefix_[b] - prefix_[tau];
    const double ss =
        static_cast<double>(prefix_squares_[b] - prefix_squares_[a] - s1 * s1 / n1 - s2 * s2 / n2);
    const double pooled = std::max(0.5, std::sqrt(std::max(0.0, ss) / (n1 + n2 - 2.0)));
    return std::fabs(static_cast<double>(s2 / n2 - s1 / n1)) /
           (pooled * std::sqrt(1.0 / n1 + 1.0 / n2));
  }

  // Pooled t-test of u[a, tau) against u[tau, b), corrected for the choice of tau.
  SideTest Test(size_t a, size_t tau, size_t b) {
    SideTest test;
    const double n1 = static_cast<double>(tau - a);
    const double n2 = static_cast<double>(b - tau);
    const long double s1 = prefix_[tau] - prefix_[a];
    const long double s2 = prefix_[b] - prefix_[tau];
    const double m1 = static_cast<double>(s1 / n1);
    const double m2 = static_cast<double>(s2 / n2);
    const double ss1 = std::max(
        0.0, static_cast<double>(prefix_squares_[tau] - prefix_squares_[a] - s1 * s1 / n1));
    const double ss2 = std::max(
        0.0, static_cast<double>(prefix_squares_[b] - prefix_squares_[tau] - s2 * s2 / n2));
    test.before_mean = center_ + sigma_ * m1;
    test.after_mean = center_ + sigma_ * m2;
    test.before_stddev = n1 > 1 ? sigma_ * std::sqrt(ss1 / (n1 - 1)) : 0.0;
    test.after_stddev = n2 > 1 ? sigma_ * std::sqrt(ss2 / (n2 - 1)) : 0.0;
    test.relative_change = test.before_mean != 0.0 ? test.after_mean / test.before_mean - 1.0 : 0.0;
    const double df = n1 + n2 - 2.0;
    if (df <= 0.0) return test;
    // Pooled sample sigma in robust-sigma units, floored at half the global robust sigma so
    // that two short, accidentally quiet sides cannot make a tiny shift "significant".
    const double pooled = std::max(0.5, std::sqrt((ss1 + ss2) / df));
    test.t = (m2 - m1) / (pooled * std::sqrt(1.0 / n1 + 1.0 / n2));
    double p_single = StudentTwoSidedP(test.t, df);
    // The pooled test borrows the long side's variance for the short side, valid only when
    // both scatter alike. Spikes that escape ReplaceOutliers come in clusters (two or more
    // within one run's 2k + 1 window, or at the series' ends), and E-Divisive then cuts a short
    // segment around them (2 spikes of a 3-run tail, 3 of 4 runs): its mean is carried by the
    // spikes and its variance is far above the long side's. There the F-test rejects equal
    // variances and Welch's test, which uses each side's own variance, is the valid one; it is
    // taken when more conservative. Only sides of at most 2k + 1 runs qualify: a longer side's
    // mean is not carried by such a cluster, and there a larger variance more often means a
    // further change inside that side, which the hierarchical search finds next (Welch would
    // only lose power on it). Homoscedastic short sides switch at rate kUnequalVarianceAlpha,
    // and a switch can only make a split fail, never pass. Evaluated only where the pooled
    // test alone would pass (it can only raise p).
    constexpr double kUnequalVarianceAlpha = 0.001;
    const double short_side = static_cast<double>(2 * options_.outlier_neighbours + 1);
    if (p_single <= options_.max_pvalue && n1 >= 2 && n2 >= 2 && std::min(n1, n2) <= short_side) {
      const double v1 = std::max(0.25, ss1 / (n1 - 1)), v2 = std::max(0.25, ss2 / (n2 - 1));
      if (VarianceRatioTwoSidedP(v1, n1 - 1, v2, n2 - 1) <= kUnequalVarianceAlpha) {
        p_single = std::max(p_single, WelchTTest(m1, v1, n1, m2, v2, n2).p);
      }
    }
    const double length = n1 + n2;
    const double m = static_cast<double>(std::max<size_t>(1, options_.min_segment));
    const double splits = std::max(1.0, length - 2.0 * m + 1.0);
    double p = p_single * splits;  // Bonferroni over all admissible splits
    if (length > 2.0 * m && p_single <= options_.max_pvalue) {
      const double z = NormalTwoSidedQuantile(p_single);
      const double siegmund = 2.0 * z * NormalPdf(z) * std::log((length - m) / m);
      p = std::min(p, siegmund);
    }
    test.p_value = std::clamp(std::max(p, p_single), 0.0, 1.0);
    const double shift = std::fabs(test.after_mean - test.before_mean);
    test.effect_ok = std::fabs(test.relative_change) >= options_.min_relative_change;
    // The within-run noise check costs O(b - a): only for otherwise passing splits.
    if (test.effect_ok && test.p_value <= options_.max_pvalue &&
        options_.min_within_noise_ratio > 0.0) {
      test.effect_ok = AtLeastRatioTimesMedian(std::span(valid_.noise).subspan(a, b - a),
                                               options_.min_within_noise_ratio, shift);
    }
    return test;
  }

  bool Passes(const SideTest& test, double max_pvalue) const {
    return test.effect_ok && test.p_value <= max_pvalue;
  }

  static size_t Before(const std::vector<size_t>& taus, size_t i) {
    return i == 0 ? 0 : taus[i - 1];
  }
  static size_t After(const std::vector<size_t>& taus, size_t i, size_t n) {
    return i + 1 == taus.size() ? n : taus[i + 1];
  }

  // Splits a value-ordered index list at position `tau` (stable: both halves stay ordered).
  static std::pair<std::vector<uint32_t>, std::vector<uint32_t>> Partition(
      const std::vector<uint32_t>& sorted, size_t tau) {
    std::pair<std::vector<uint32_t>, std::vector<uint32_t>> halves;
    for (uint32_t i : sorted) (i < tau ? halves.first : halves.second).push_back(i);
    return halves;
  }

  // Looks for a change inside [a, split) and [split, b), each tested at max_pvalue / 2^depth
  // (a Bonferroni share per exploration level), recursing up to kMaxExploreDepth levels.
  std::optional<size_t> Explore(size_t a, size_t b, const std::vector<uint32_t>& sorted,
                                size_t split, int depth) {
    constexpr int kMaxExploreDepth = 2;
    const size_t m = std::max<size_t>(1, options_.min_segment);
    const double threshold = options_.max_pvalue / std::ldexp(1.0, depth);
    auto halves = Partition(sorted, split);
    const std::pair<size_t, size_t> bounds[2] = {{a, split}, {split, b}};
    const std::vector<uint32_t>* orders[2] = {&halves.first, &halves.second};
    std::optional<size_t> best;
    double best_p = 2.0;
    size_t next_split[2] = {0, 0};
    for (int h = 0; h < 2; ++h) {
      const auto [lo, hi] = bounds[h];
      const auto candidate = BestSplitKappaFixed(u_, lo, hi, m, *orders[h], energy_);
      if (!candidate) continue;
      next_split[h] = candidate->tau;
      const SideTest test = Test(lo, candidate->tau, hi);
      if (Passes(test, threshold) && test.p_value < best_p) {
        best = candidate->tau;
        best_p = test.p_value;
      }
    }
    if (best || depth >= kMaxExploreDepth) return best;
    for (int h = 0; h < 2; ++h) {
      const auto [lo, hi] = bounds[h];
      if (next_split[h] == 0 || hi - lo < 4 * m) continue;
      if (auto found = Explore(lo, hi, *orders[h], next_split[h], depth + 1)) return found;
    }
    return std::nullopt;
  }

  const Valid& valid_;
  const DetectorOptions& options_;
  double sigma_ = 1.0;
  double center_ = 0.0;
  std::vector<double> u_;
  std::vector<long double> prefix_;
  std::vector<long double> prefix_squares_;
  std::vector<double> scratch_;
  EnergyScratch energy_;
};

std::vector<ChangePoint> AnalyzeDefault(std::span<const Point> points, size_t offset,
                                        const DetectorOptions& options) {
  const Valid valid = CollectValid(points, offset);
  Analysis analysis(valid, options);
  return analysis.Run();
}

std::vector<ChangePoint> AnalyzeOtava(std::span<const Point> points,
                                      const DetectorOptions& options) {
  std::vector<double> series;
  series.reserve(points.size());
  for (const Point& p : points) series.push_back(std::isfinite(p.value) ? p.value : std::nan(""));
  otava::FillMissing(series);
  if (!series.empty() && std::isnan(series.front())) return {};  // no value at all
  otava::Options otava_options;
  otava_options.window = options.otava_window;
  otava_options.max_pvalue = options.otava_max_pvalue;
  otava_options.min_magnitude = options.otava_min_magnitude;
  std::vector<ChangePoint> result;
  for (const otava::ChangePoint& o : otava::ComputeChangePoints(series, otava_options)) {
    ChangePoint cp;
    cp.index = o.index;
    cp.previous_index = o.index - 1;
    cp.before_mean = o.mean_before;
    cp.after_mean = o.mean_after;
    cp.before_stddev = o.std_before;
    cp.after_stddev = o.std_after;
    cp.before_count = o.count_before;
    cp.after_count = o.count_after;
    cp.relative_change = o.ForwardChange();
    cp.t_statistic = -o.t_statistic;  // upstream computes before minus after
    cp.p_value = o.p_value;
    cp.confidence = 1.0 - o.p_value;
    cp.q_hat = o.q_hat;
    result.push_back(cp);
  }
  return result;
}

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError("detector options: " + message);
}

}  // namespace

absl::Status ValidateOptions(const DetectorOptions& o) {
  if (!(o.max_pvalue > 0.0 && o.max_pvalue <= 1.0)) return Invalid("max_pvalue must be in (0, 1]");
  if (!(o.min_relative_change >= 0.0)) return Invalid("min_relative_change must be >= 0");
  if (!(o.min_within_noise_ratio >= 0.0)) return Invalid("min_within_noise_ratio must be >= 0");
  if (o.min_segment < 1) return Invalid("min_segment must be >= 1");
  if (!(o.outlier_threshold >= 0.0)) return Invalid("outlier_threshold must be >= 0");
  if (o.incremental_horizon < 4 * o.min_segment) {
    return Invalid("incremental_horizon must be >= 4 x min_segment");
  }
  if (o.gate_window < 2) return Invalid("gate_window must be >= 2");
  if (o.gate_min_history < 2 || o.gate_min_history > o.gate_window) {
    return Invalid("gate_min_history must be in [2, gate_window]");
  }
  if (!(o.gate_threshold > 0.0)) return Invalid("gate_threshold must be > 0");
  if (o.otava_window < 2) return Invalid("otava_window must be >= 2");
  if (!(o.otava_max_pvalue > 0.0 && o.otava_max_pvalue <= 1.0)) {
    return Invalid("otava_max_pvalue must be in (0, 1]");
  }
  if (!(o.otava_min_magnitude >= 0.0)) return Invalid("otava_min_magnitude must be >= 0");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ChangePoint>> Detect(std::span<const Point> points,
                                                const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  if (options.mode == Mode::kOtava) return AnalyzeOtava(points, options);
  return AnalyzeDefault(points, 0, options);
}

absl::StatusOr<std::vector<ChangePoint>> DetectValues(std::span<const double> values,
                                                      const DetectorOptions& options) {
  std::vector<Point> points(values.size());
  for (size_t i = 0; i < values.size(); ++i) points[i].value = values[i];
  return Detect(points, options);
}

absl::StatusOr<Detector> Detector::Create(const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  return Detector(options);
}

void Detector::Reset(std::span<const Point> points) {
  points_.assign(points.begin(), points.end());
  change_points_ = options_.mode == Mode::kOtava ? AnalyzeOtava(points_, options_)
                                                 : AnalyzeDefault(points_, 0, options_);
}

void Detector::Append(Point point) {
  points_.push_back(point);
  if (!std::isfinite(point.value)) return;  // a missing night changes nothing
  if (options_.mode == Mode::kOtava) {
    change_points_ = AnalyzeOtava(points_, options_);
    return;
  }
  const size_t n = points_.size();
  // Re-analyse from the start of the second-to-last segment; when that is further back than
  // the horizon, from the horizon, snapped to a known change point close to it so that the
  // region never starts with a few runs of an older level.
  size_t start = change_points_.size() >= 2 ? change_points_[change_points_.size() - 2].index : 0;
  if (n - start > options_.incremental_horizon) {
    start = n - options_.incremental_horizon;
    const size_t margin = 2 * options_.min_segment;
    for (const ChangePoint& cp : change_points_) {
      if (cp.index + margin > start && cp.index <= start + margin) {
        start = cp.index;
        break;
      }
    }
  }
  // Change points up to `start` stay as they are; the region yields those after it.
  std::vector<ChangePoint> updated;
  for (const ChangePoint& cp : change_points_) {
    if (cp.index <= start) updated.push_back(cp);
  }
  const std::span<const Point> region(points_.data() + start, n - start);
  for (const ChangePoint& cp : AnalyzeDefault(region, start, options_)) {
    if (cp.index > start) updated.push_back(cp);
  }
  change_points_ = std::move(updated);
}

std::string GateVerdictName(GateVerdict verdict) {
  switch (verdict) {
    case GateVerdict::kNone:
      return "none";
    case GateVerdict::kSuspected:
      return "suspected";
    case GateVerdict::kInsufficientHistory:
      return "insufficient_history";
    case GateVerdict::kMissing:
      return "missing";
  }
  return "unknown";
}

absl::StatusOr<GateResult> GateNewest(std::span<const Point> points,
                                      const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  if (points.empty()) return absl::InvalidArgumentError("GateNewest: empty series");
  GateResult result;
  const Point newest = points.back();
  result.value = newest.value;
  if (!std::isfinite(newest.value)) {
    result.verdict = GateVerdict::kMissing;
    return result;
  }
  // Up to 2 x gate_window valid runs before the newest; keep those after their last change.
  Valid recent;
  for (size_t i = points.size() - 1; i > 0 && recent.values.size() < 2 * options.gate_window; --i) {
    const Point& p = points[i - 1];
    if (!std::isfinite(p.value)) continue;
    recent.values.push_back(p.value);
    recent.noise.push_back(p.noise);
    recent.index.push_back(i - 1);
  }
  std::reverse(recent.values.begin(), recent.values.end());
  std::reverse(recent.noise.begin(), recent.noise.end());
  std::reverse(recent.index.begin(), recent.index.end());
  size_t from = 0;
  {
    DetectorOptions inner = options;
    inner.mode = Mode::kDefault;
    Analysis analysis(recent, inner);
    const std::vector<ChangePoint> cps = analysis.Run();
    if (!cps.empty()) {
      from = static_cast<size_t>(
          std::lower_bound(recent.index.begin(), recent.index.end(), cps.back().index) -
          recent.index.begin());
    }
  }
  if (recent.values.size() - from > options.gate_window) {
    from = recent.values.size() - options.gate_window;
  }
  const std::span<const double> baseline(recent.values.data() + from, recent.values.size() - from);
  result.baseline_count = baseline.size();
  if (baseline.size() < options.gate_min_history) {
    result.verdict = GateVerdict::kInsufficientHistory;
    return result;
  }
  std::vector<double> scratch;
  result.baseline = Median(baseline);
  result.baseline_sigma = RobustSigma(baseline, scratch);
  const double n = static_cast<double>(baseline.size());
  const double shift = newest.value - result.baseline;
  result.z = shift / (result.baseline_sigma * std::sqrt(1.0 + 1.57 / n));
  result.relative_change = result.baseline != 0.0 ? newest.value / result.baseline - 1.0 : 0.0;
  bool effect_ok = std::fabs(result.relative_change) >= options.min_relative_change;
  if (effect_ok && options.min_within_noise_ratio > 0.0) {
    scratch.clear();
    for (size_t i = from; i < recent.noise.size(); ++i) {
      if (std::isfinite(recent.noise[i]) && recent.noise[i] > 0.0) {
        scratch.push_back(recent.noise[i]);
      }
    }
    if (std::isfinite(newest.noise) && newest.noise > 0.0) scratch.push_back(newest.noise);
    if (!scratch.empty()) {
      effect_ok = std::fabs(shift) >= options.min_within_noise_ratio * MedianInPlace(scratch);
    }
  }
  result.verdict = effect_ok && std::fabs(result.z) >= options.gate_threshold
                       ? GateVerdict::kSuspected
                       : GateVerdict::kNone;
  return result;
}

}  // namespace devtime::detect
