#include "services/collector/detect/otava.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "services/collector/detect/edivisive.h"
#include "services/collector/detect/stats.h"

namespace devtime::detect::otava {
namespace {

struct Interval {
  size_t begin;
  size_t end;
};

// tester.get_intervals: [0, c1), [c1, c2), ..., [ck, N), empty ones dropped.
std::vector<Interval> Intervals(const std::vector<ChangePoint>& cps, size_t n) {
  std::vector<Interval> intervals;
  size_t previous = 0;
  for (const ChangePoint& cp : cps) {
    if (cp.index != previous) intervals.push_back({previous, cp.index});
    previous = cp.index;
  }
  if (previous != n) intervals.push_back({previous, n});
  return intervals;
}

// TTestSignificanceTester.compare on series[left) vs series[right).
ChangePoint Compare(std::span<const double> series, size_t index, Interval left, Interval right,
                    double q_hat) {
  ChangePoint cp;
  cp.index = index;
  cp.q_hat = q_hat;
  const auto l = series.subspan(left.begin, left.end - left.begin);
  const auto r = series.subspan(right.begin, right.end - right.begin);
  const Moments ml = MeanStd(l, 0);
  const Moments mr = MeanStd(r, 0);
  cp.mean_before = ml.mean;
  cp.mean_after = mr.mean;
  cp.std_before = l.size() >= 2 ? ml.stddev : 0.0;
  cp.std_after = r.size() >= 2 ? mr.stddev : 0.0;
  cp.count_before = l.size();
  cp.count_after = r.size();
  if (l.size() + r.size() > 2) {
    const TTestResult t = PooledTTest(cp.mean_before, cp.std_before, static_cast<double>(l.size()),
                                      cp.mean_after, cp.std_after, static_cast<double>(r.size()));
    cp.t_statistic = t.t;
    cp.p_value = t.p;
  }
  return cp;
}

// SignificanceTester.get_sides + compare: merge-step sides when the index ends an interval,
// split-step sides when it lies inside one.
ChangePoint Evaluate(std::span<const double> series, size_t index, double q_hat,
                     const std::vector<Interval>& intervals) {
  for (size_t i = 0; i < intervals.size(); ++i) {
    const Interval& interval = intervals[i];
    if (interval.end == index && i + 1 < intervals.size()) {
      return Compare(series, index, interval, intervals[i + 1], q_hat);
    }
    if (interval.begin < index && index < interval.end) {
      return Compare(series, index, {interval.begin, index}, {index, interval.end}, q_hat);
    }
  }
  ChangePoint cp;  // cannot happen for well-formed input
  cp.index = index;
  cp.q_hat = q_hat;
  cp.p_value = std::nan("");
  return cp;
}

std::optional<SplitCandidate> NextCandidate(std::span<const double> series,
                                            const std::vector<Interval>& intervals) {
  std::optional<SplitCandidate> best;
  for (const Interval& interval : intervals) {
    if (interval.end - interval.begin <= 1) continue;
    auto candidate = BestSplitKappaFree(series, interval.begin, interval.end);
    if (candidate && (!best || candidate->q_hat > best->q_hat)) best = candidate;
  }
  return best;
}

void InsertSorted(std::vector<ChangePoint>& cps, const ChangePoint& cp) {
  auto at = std::upper_bound(cps.begin(), cps.end(), cp.index,
                             [](size_t index, const ChangePoint& c) { return index < c.index; });
  cps.insert(at, cp);
}

}  // namespace

double ChangePoint::ForwardChange() const {
  return mean_before == 0.0 ? 0.0 : mean_after / mean_before - 1.0;
}

double ChangePoint::Magnitude() const {
  const double backward = mean_after == 0.0 ? 0.0 : mean_before / mean_after - 1.0;
  return std::max(std::fabs(ForwardChange()), std::fabs(backward));
}

void FillMissing(std::vector<double>& series) {
  bool have = false;
  double previous = 0.0;
  for (double& v : series) {
    if (std::isnan(v) && have) v = previous;
    if (!std::isnan(v)) {
      have = true;
      previous = v;
    }
  }
  have = false;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    if (std::isnan(*it) && have) *it = previous;
    if (!std::isnan(*it)) {
      have = true;
      previous = *it;
    }
  }
}

std::vector<ChangePoint> DivisiveTTest(std::span<const double> series, double max_pvalue) {
  std::vector<ChangePoint> cps;
  while (true) {
    const std::vector<Interval> intervals = Intervals(cps, series.size());
    const auto candidate = NextCandidate(series, intervals);
    if (!candidate) break;
    ChangePoint cp = Evaluate(series, candidate->tau, candidate->q_hat, intervals);
    if (!(cp.p_value <= max_pvalue)) break;
    InsertSorted(cps, cp);
  }
  return cps;
}

std::vector<ChangePoint> DivisivePermutation(std::span<const double> series, double max_pvalue,
                                             int permutations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ChangePoint> cps;
  std::vector<double> shuffled;
  while (true) {
    const std::vector<Interval> intervals = Intervals(cps, series.size());
    const auto candidate = NextCandidate(series, intervals);
    if (!candidate) break;
    int extreme = 0;
    for (int r = 0; r < permutations; ++r) {
      shuffled.assign(series.begin(), series.end());
      for (const Interval& interval : intervals) {
        std::shuffle(shuffled.begin() + static_cast<std::ptrdiff_t>(interval.begin),
                     shuffled.begin() + static_cast<std::ptrdiff_t>(interval.end), rng);
      }
      const auto permuted = NextCandidate(shuffled, intervals);
      if (permuted && permuted->q_hat >= candidate->q_hat) ++extreme;
    }
    ChangePoint cp = Evaluate(series, candidate->tau, candidate->q_hat, intervals);
    cp.p_value = static_cast<double>(extreme) / (permutations + 1);
    if (!(cp.p_value <= max_pvalue)) break;
    InsertSorted(cps, cp);
  }
  return cps;
}

std::vector<ChangePoint> Split(std::span<const double> series, size_t window, double pvalue) {
  if (window < 2) window = 2;
  const size_t n = series.size();
  const size_t step = window / 2;
  std::vector<ChangePoint> weak;
  size_t start = 0;
  while (start < n) {
    const size_t end = std::min(start + window, n);
    std::vector<ChangePoint> found = DivisiveTTest(series.subspan(start, end - start), pvalue);
    const size_t last = found.empty() ? 0 : found.back().index + start;
    for (ChangePoint& cp : found) {
      cp.index += start;
      const bool duplicate = std::any_of(weak.begin(), weak.end(),
                                         [&](const ChangePoint& c) { return c.index == cp.index; });
      if (!duplicate) weak.push_back(cp);
    }
    start = std::max(last, start + step);
  }
  std::stable_sort(weak.begin(), weak.end(),
                   [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  const std::vector<Interval> intervals = Intervals(weak, n);
  for (ChangePoint& cp : weak) cp = Evaluate(series, cp.index, cp.q_hat, intervals);
  return weak;
}

namespace {

std::vector<ChangePoint> Merge(std::vector<ChangePoint> cps, std::span<const double> series,
                               double max_pvalue, double min_magnitude, bool quirk) {
  while (!cps.empty()) {
    // Python max(key=p): the first element unless a later one compares strictly greater.
    size_t weakest = 0;
    for (size_t i = 1; i < cps.size(); ++i) {
      if (cps[i].p_value > cps[weakest].p_value) weakest = i;
    }
    if (cps[weakest].p_value < max_pvalue) {
      weakest = 0;
      for (size_t i = 1; i < cps.size(); ++i) {
        if (cps[i].Magnitude() < cps[weakest].Magnitude()) weakest = i;
      }
      if (cps[weakest].Magnitude() > min_magnitude) return cps;
    }
    cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(weakest));
    const std::vector<Interval> intervals = Intervals(cps, series.size());
    auto recompute = [&](size_t k) {
      if (k >= cps.size()) return;
      cps[k] = Evaluate(series, cps[k].index, cps[k].q_hat, intervals);
    };
    if (quirk) {
      recompute(weakest);
      recompute(weakest + 1);
    } else {
      if (weakest > 0) recompute(weakest - 1);
      recompute(weakest);
    }
  }
  return cps;
}

}  // namespace

std::vector<ChangePoint> ComputeChangePoints(std::span<const double> series,
                                             const Options& options) {
  const double p = options.max_pvalue;
  const double first_pass = p < 0.05 ? p * 10 : (p < 0.5 ? p * 2 : p);
  std::vector<ChangePoint> weak = Split(series, options.window, first_pass);
  return Merge(std::move(weak), series, p, options.min_magnitude, options.upstream_merge_quirk);
}

}  // namespace devtime::detect::otava
