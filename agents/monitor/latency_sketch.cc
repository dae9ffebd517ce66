#include "agents/monitor/latency_sketch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace devtime::agent::monitor {

LatencySketch::LatencySketch(double relative_accuracy)
    : accuracy_(relative_accuracy),
      log_gamma_(std::log((1 + relative_accuracy) / (1 - relative_accuracy))) {}

int LatencySketch::IndexOf(double value_us) const {
  return static_cast<int>(std::ceil(std::log(value_us) / log_gamma_));
}

double LatencySketch::ValueOf(int index) const {
  const double gamma = std::exp(log_gamma_);
  return 2 * std::exp(index * log_gamma_) / (gamma + 1);
}

void LatencySketch::Extend(double lo_us, double hi_us, double weight) {
  if (total_ <= 0) {
    min_ = lo_us;
    max_ = hi_us;
  } else {
    min_ = std::min(min_, lo_us);
    max_ = std::max(max_, hi_us);
  }
  total_ += weight;
}

void LatencySketch::Add(double value_us, double weight) {
  if (!(value_us >= 0) || !(weight > 0) || !std::isfinite(value_us) || !std::isfinite(weight)) {
    return;
  }
  Extend(value_us, value_us, weight);
  if (value_us <= kZeroUs) {
    zero_ += weight;
    return;
  }
  AddToBucket(IndexOf(value_us), weight);
}

void LatencySketch::AddUniform(double lo_us, double hi_us, double weight) {
  if (!(hi_us > lo_us) || !std::isfinite(hi_us)) {
    Add(lo_us, weight);
    return;
  }
  if (!(lo_us >= 0) || !(weight > 0) || !std::isfinite(weight)) return;
  Extend(lo_us, hi_us, weight);
  const double span = hi_us - lo_us;
  double from = lo_us;
  if (from <= kZeroUs) {
    const double upto = std::min(hi_us, kZeroUs);
    zero_ += weight * (upto - from) / span;
    from = upto;
  }
  // Bucket i holds (gamma^(i-1), gamma^i]: walk the buckets the range covers.
  for (int i = from > 0 ? IndexOf(from) : 0; from < hi_us; ++i) {
    const double upper = std::min(hi_us, std::exp(i * log_gamma_));
    if (upper > from) AddToBucket(i, weight * (upper - from) / span);
    from = std::max(from, upper);
  }
}

void LatencySketch::AddToBucket(int index, double weight) {
  if (weights_.empty()) {
    min_index_ = index;
    weights_.assign(1, 0.0);
  } else if (index < min_index_) {
    // Bounded: beyond kMaxBuckets the lowest buckets fold into the new lowest one (latencies
    // 4,000 buckets apart differ by a factor of e^40; never seen for real).
    const int grow = min_index_ - index;
    weights_.insert(weights_.begin(), static_cast<std::size_t>(grow), 0.0);
    min_index_ = index;
  }
  std::size_t at = static_cast<std::size_t>(index - min_index_);
  if (at >= weights_.size()) weights_.resize(at + 1, 0.0);
  weights_[at] += weight;
  if (weights_.size() > static_cast<std::size_t>(kMaxBuckets)) {
    const std::size_t fold = weights_.size() - kMaxBuckets;
    double low = 0;
    for (std::size_t k = 0; k <= fold; ++k) low += weights_[k];
    weights_.erase(weights_.begin(), weights_.begin() + static_cast<long>(fold));
    weights_[0] = low;
    min_index_ += static_cast<int>(fold);
  }
}

bool LatencySketch::Merge(const LatencySketch& other) {
  if (other.accuracy_ != accuracy_) return false;
  if (other.empty()) return true;
  if (empty()) {
    *this = other;
    return true;
  }
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  zero_ += other.zero_;
  total_ += other.total_;
  if (other.weights_.empty()) return true;
  if (weights_.empty()) {
    weights_ = other.weights_;
    min_index_ = other.min_index_;
    return true;
  }
  const int lo = std::min(min_index_, other.min_index_);
  const int hi = std::max(min_index_ + static_cast<int>(weights_.size()),
                          other.min_index_ + static_cast<int>(other.weights_.size()));
  std::vector<double> merged(static_cast<std::size_t>(hi - lo), 0.0);
  for (std::size_t k = 0; k < weights_.size(); ++k) merged[k + (min_index_ - lo)] += weights_[k];
  for (std::size_t k = 0; k < other.weights_.size(); ++k) {
    merged[k + (other.min_index_ - lo)] += other.weights_[k];
  }
  weights_ = std::move(merged);
  min_index_ = lo;
  return true;
}

double LatencySketch::Quantile(double q) const {
  if (empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * total_;
  double seen = zero_;
  if (seen >= rank && zero_ > 0) return std::min(min_, kZeroUs);
  for (std::size_t k = 0; k < weights_.size(); ++k) {
    seen += weights_[k];
    if (seen >= rank && weights_[k] > 0) {
      return std::clamp(ValueOf(min_index_ + static_cast<int>(k)), min_, max_);
    }
  }
  return max_;
}

LatencySketch LatencySketch::FromParts(double relative_accuracy, int min_index,
                                       std::vector<double> weights, double zero_weight,
                                       double min_us, double max_us) {
  LatencySketch sketch(relative_accuracy);
  sketch.min_index_ = min_index;
  sketch.weights_ = std::move(weights);
  sketch.zero_ = zero_weight;
  sketch.total_ = zero_weight;
  for (double w : sketch.weights_) sketch.total_ += w;
  sketch.min_ = min_us;
  sketch.max_ = max_us;
  return sketch;
}

bool FeedPeriod(LatencySketch& sketch, const double (&points_us)[kMonitorPoints],
                double executions) {
  for (int i = 0; i < kMonitorPoints; ++i) {
    if (!std::isfinite(points_us[i]) || points_us[i] < 0) return false;
    if (i > 0 && points_us[i] < points_us[i - 1]) return false;
  }
  if (!(executions > 0)) return true;  // an idle period adds nothing
  for (int r = 0; r + 1 < kMonitorPoints; ++r) {
    const double mass = kMonitorQuantiles[r + 1] - kMonitorQuantiles[r];
    sketch.AddUniform(points_us[r], points_us[r + 1], executions * mass);
  }
  return true;
}

namespace {

// P(X <= x) for one period's piecewise-linear quantile function.
double PeriodCdf(const std::vector<double>& p, double x) {
  if (x < p.front()) return 0;
  if (x >= p.back()) return 1;
  for (int r = 0; r + 1 < kMonitorPoints; ++r) {
    if (x < p[r + 1]) {
      const double span = p[r + 1] - p[r];
      const double f = span > 0 ? (x - p[r]) / span : 1;
      return kMonitorQuantiles[r] + f * (kMonitorQuantiles[r + 1] - kMonitorQuantiles[r]);
    }
  }
  return 1;
}

}  // namespace

double ExactMixtureQuantile(const std::vector<std::vector<double>>& periods_us,
                            const std::vector<double>& executions, double q) {
  double lo = std::numeric_limits<double>::max(), hi = 0, total = 0;
  for (std::size_t i = 0; i < periods_us.size(); ++i) {
    if (!(executions[i] > 0)) continue;
    lo = std::min(lo, periods_us[i].front());
    hi = std::max(hi, periods_us[i].back());
    total += executions[i];
  }
  if (total <= 0) return std::numeric_limits<double>::quiet_NaN();
  for (int iteration = 0; iteration < 200; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    double below = 0;
    for (std::size_t i = 0; i < periods_us.size(); ++i) {
      if (executions[i] > 0) below += executions[i] * PeriodCdf(periods_us[i], mid);
    }
    (below >= q * total ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace devtime::agent::monitor
