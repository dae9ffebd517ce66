// A mergeable log-bucket latency histogram (DDSketch-style): the window's distribution of
// latencies, fed from neuron-monitor's per-period percentiles weighted by executions.
//
// Bucket i holds the weight of values v (microseconds) with gamma^(i-1) < v <= gamma^i,
// gamma = (1 + a) / (1 - a) for the relative accuracy a; a bucket's value is read as
// 2 gamma^i / (gamma + 1), which is within a of every value in it. So the q-quantile read
// from the sketch is within a (relative) of a value whose rank is q in the weighted data fed
// in: the only error the sketch adds. Two sketches of one accuracy merge by adding weights,
// so hosts' windows merge into a fleet window exactly as if one sketch had seen both.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

namespace devtime::agent::monitor {

class LatencySketch {
 public:
  static constexpr double kDefaultAccuracy = 0.005;  // 0.5 %
  static constexpr int kMaxBuckets = 4096;           // 0.5 %: ~1e-3 us .. 1e15 us fits in 4,000
  static constexpr double kZeroUs = 1e-3;            // values at or below land in the zero bucket

  explicit LatencySketch(double relative_accuracy = kDefaultAccuracy);

  // Adds `weight` (> 0) at `value_us` (>= 0; NaN and negatives are ignored).
  void Add(double value_us, double weight);
  // Adds `weight` spread uniformly over [lo_us, hi_us]: each bucket gets the share of the
  // range it covers (exact; a point when hi_us <= lo_us).
  void AddUniform(double lo_us, double hi_us, double weight);
  // Adds the other sketch's weights; false (nothing changed) when the accuracies differ.
  bool Merge(const LatencySketch& other);
  // The q-quantile (0 <= q <= 1); NaN when empty.
  double Quantile(double q) const;
  double total_weight() const { return total_; }
  bool empty() const { return total_ <= 0; }

  double relative_accuracy() const { return accuracy_; }
  int min_index() const { return min_index_; }
  const std::vector<double>& weights() const { return weights_; }
  double zero_weight() const { return zero_; }
  double min_us() const { return min_; }
  double max_us() const { return max_; }
  // Rebuilds a sketch from its parts (as sent on the wire).
  static LatencySketch FromParts(double relative_accuracy, int min_index,
                                 std::vector<double> weights, double zero_weight, double min_us,
                                 double max_us);

 private:
  int IndexOf(double value_us) const;
  void AddToBucket(int index, double weight);
  void Extend(double lo_us, double hi_us, double weight);  // min, max and total
  double ValueOf(int index) const;

  double accuracy_;
  double log_gamma_;
  int min_index_ = 0;
  std::vector<double> weights_;  // weights_[k] is bucket min_index_ + k
  double zero_ = 0;
  double total_ = 0;
  double min_ = 0;
  double max_ = 0;
};

// neuron-monitor's percentile points of one period (seconds), p0 p1 p25 p50 p75 p99 p100.
inline constexpr double kMonitorQuantiles[] = {0.0, 0.01, 0.25, 0.50, 0.75, 0.99, 1.0};
inline constexpr int kMonitorPoints = 7;

// Feeds one period into `sketch`: the period's latency distribution is taken to be the one
// whose quantile function runs linearly between its reported percentiles (values in
// microseconds, non-decreasing), and `executions` values are spread over it: each of the six
// ranges between neighbouring percentiles gets its share of the weight, uniformly over the
// range (AddUniform: each bucket the part of the range it covers). Returns false (nothing
// fed) when the points are not finite or not non-decreasing.
bool FeedPeriod(LatencySketch& sketch, const double (&points_us)[kMonitorPoints],
                double executions);

// The exact q-quantile of the mixture of periods (each period's piecewise-linear quantile
// function as above, weighted by its executions): what the sketch approximates. For tests and
// the benchmark. Bisection on the mixture's CDF.
double ExactMixtureQuantile(const std::vector<std::vector<double>>& periods_us,
                            const std::vector<double>& executions, double q);

}  // namespace devtime::agent::monitor
