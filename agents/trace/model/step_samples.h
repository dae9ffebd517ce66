// devtime::trace — StepSamples: one value per ProfilerStep window, stored sparsely.
//
// An operator's per-step samples read as a dense sequence (one value per window, 0.0 where the
// op recorded nothing), but only the windows with a value are stored. A trace with S steps and
// N distinct op names therefore costs memory in proportion to the (op, step) pairs that occur,
// not S × N (issue 12 item 6: 22,632 steps made the dense form 4.3 GB).
//
// Thread-safety: a value type; concurrent reads are safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

namespace devtime::trace {

class StepSamples {
 public:
  StepSamples() = default;
  // `windows` windows, all 0.
  explicit StepSamples(size_t windows) : size_(windows) {}
  // Exactly these values, in window order (zeros are not stored).
  StepSamples(std::initializer_list<double> dense) : size_(dense.size()) {
    uint32_t i = 0;
    for (double v : dense) {
      if (v != 0.0) values_.emplace_back(i, v);
      ++i;
    }
  }

  // The number of windows (dense length).
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The value of window `i` (< size()).
  double operator[](size_t i) const {
    auto it = Find(i);
    return it != values_.end() && it->first == i ? it->second : 0.0;
  }
  void clear() {
    size_ = 0;
    values_.clear();
  }
  // Adds `v` to window `i` (< size()). Cheapest when windows come in increasing order.
  void Add(size_t i, double v) {
    if (v == 0.0) return;
    const auto w = static_cast<uint32_t>(i);
    if (values_.empty() || values_.back().first < w) {
      values_.emplace_back(w, v);
      return;
    }
    if (values_.back().first == w) {
      values_.back().second += v;
      return;
    }
    auto it = Find(i);
    if (it != values_.end() && it->first == w) {
      it->second += v;
    } else {
      values_.insert(it, {w, v});
    }
  }
  // Adds every window of `other` (same size()) to this one.
  void AddAll(const StepSamples& other) {
    for (const auto& [i, v] : other.values_) Add(i, v);
  }
  // How many windows are stored (have a non-zero value).
  size_t stored() const { return values_.size(); }
  // The sum over all windows, in window order (the dense walk's sum, without its zeros): what a
  // per-step mean divides, in O(stored) rather than O(size).
  double Sum() const {
    double sum = 0;
    for (const auto& x : values_) sum += x.second;
    return sum;
  }
  // From one value per window (zeros not stored).
  static StepSamples FromDense(const std::vector<double>& dense) {
    StepSamples s(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) {
      if (dense[i] != 0.0) s.values_.emplace_back(static_cast<uint32_t>(i), dense[i]);
    }
    return s;
  }

  friend bool operator==(const StepSamples& a, const StepSamples& b) {
    return a.size_ == b.size_ && a.values_ == b.values_;
  }

  // Walks all size() windows in order, yielding 0.0 for those not stored.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = double;
    using difference_type = std::ptrdiff_t;
    using pointer = const double*;
    using reference = const double&;

    const_iterator() = default;
    const double& operator*() const {
      value_ = next_ != s_->values_.end() && next_->first == i_ ? next_->second : 0.0;
      return value_;
    }
    const_iterator& operator++() {
      if (next_ != s_->values_.end() && next_->first == i_) ++next_;
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.i_ == b.i_;
    }

   private:
    friend class StepSamples;
    using Stored = std::vector<std::pair<uint32_t, double>>::const_iterator;
    const_iterator(const StepSamples* s, size_t i, Stored next) : s_(s), i_(i), next_(next) {}
    const StepSamples* s_ = nullptr;
    size_t i_ = 0;
    Stored next_;
    mutable double value_ = 0.0;
  };
  const_iterator begin() const { return const_iterator(this, 0, values_.begin()); }
  const_iterator end() const { return const_iterator(this, size_, values_.end()); }

 private:
  std::vector<std::pair<uint32_t, double>>::iterator Find(size_t i) {
    return std::lower_bound(values_.begin(), values_.end(), i,
                            [](const auto& x, size_t w) { return x.first < w; });
  }
  std::vector<std::pair<uint32_t, double>>::const_iterator Find(size_t i) const {
    return std::lower_bound(values_.begin(), values_.end(), i,
                            [](const auto& x, size_t w) { return x.first < w; });
  }

  size_t size_ = 0;
  std::vector<std::pair<uint32_t, double>> values_;  // (window, value), sorted, unique, != 0
};

}  // namespace devtime::trace
