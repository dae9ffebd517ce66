#include "services/collector/detect/edivisive.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace devtime::detect {
namespace {

// Q from the three distance sums (see header); sums are long double to limit cancellation.
inline long double QFromSums(long double sxy, long double sxx, long double syy, double n,
                             double m) {
  const long double total = n + m;
  long double q = 2.0L / total * sxy;
  if (n >= 2) q -= 2.0L * m / (total * (n - 1)) * sxx;
  if (m >= 2) q -= 2.0L * n / (total * (m - 1)) * syy;
  return q;
}

}  // namespace

double QHatDirect(std::span<const double> x, std::span<const double> y) {
  long double sxy = 0, sxx = 0, syy = 0;
  for (double a : x)
    for (double b : y) sxy += std::fabs(a - b);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t k = i + 1; k < x.size(); ++k) sxx += std::fabs(x[i] - x[k]);
  for (size_t i = 0; i < y.size(); ++i)
    for (size_t k = i + 1; k < y.size(); ++k) syy += std::fabs(y[i] - y[k]);
  return static_cast<double>(
      QFromSums(sxy, sxx, syy, static_cast<double>(x.size()), static_cast<double>(y.size())));
}

std::optional<SplitCandidate> BestSplitKappaFree(std::span<const double> z, size_t begin,
                                                 size_t end) {
  if (end <= begin || end - begin < 2) return std::nullopt;
  const size_t length = end - begin;
  const double* v = z.data() + begin;
  // ws[b] = W(begin, begin + b) for b in [0, length].
  std::vector<long double> ws(length + 1, 0.0L);
  for (size_t b = 1; b < length; ++b) {
    long double add = 0.0L;
    for (size_t i = 0; i < b; ++i) add += std::fabs(v[i] - v[b]);
    ws[b + 1] = ws[b] + add;
  }
  // col[k] = sum_{i=t}^{k-1} d(i, k) for the current t (relative indices).
  std::vector<long double> col(length, 0.0L);
  SplitCandidate best;
  long double best_q = 0.0L;
  bool have = false;
  for (size_t t = length - 1; t >= 1; --t) {
    for (size_t k = t + 1; k < length; ++k) col[k] += std::fabs(v[t] - v[k]);
    const double n = static_cast<double>(t);
    const long double sxx = ws[t];
    long double wtk = 0.0L;  // W(t, k)
    for (size_t k = t + 1; k <= length; ++k) {
      if (k > t + 1) wtk += col[k - 1];
      const double m = static_cast<double>(k - t);
      const long double sxy = ws[k] - sxx - wtk;
      const long double q = QFromSums(sxy, sxx, wtk, n, m);
      // Row-major first maximum: rows are visited from the bottom, so an equal value in a
      // lower row (smaller t) replaces; within a row the first (smallest k) wins.
      if (!have || q > best_q || (q == best_q && t < best.tau - begin) ||
          (q == best_q && t == best.tau - begin && k < best.kappa - begin)) {
        have = true;
        best_q = q;
        best.tau = begin + t;
        best.kappa = begin + k;
      }
    }
  }
  best.q_hat = static_cast<double>(best_q);
  return best;
}

std::optional<SplitCandidate> BestSplitKappaFixed(std::span<const double> z, size_t begin,
                                                  size_t end, size_t min_segment,
                                                  EnergyScratch& scratch) {
  if (end <= begin) return std::nullopt;
  std::vector<uint32_t> sorted(end - begin);
  std::iota(sorted.begin(), sorted.end(), static_cast<uint32_t>(begin));
  std::sort(sorted.begin(), sorted.end(), [&z](uint32_t a, uint32_t b) { return z[a] < z[b]; });
  return BestSplitKappaFixed(z, begin, end, min_segment, sorted, scratch);
}

std::optional<SplitCandidate> BestSplitKappaFixed(std::span<const double> z, size_t begin,
                                                  size_t end, size_t min_segment,
                                                  std::span<const uint32_t> sorted,
                                                  EnergyScratch& scratch) {
  if (min_segment == 0) min_segment = 1;
  if (end <= begin || end - begin < 2 * min_segment) return std::nullopt;
  return BestSplitOfProfile(begin, end, min_segment,
                            DistanceProfileOf(z, begin, end, sorted, scratch), scratch);
}

DistanceProfile DistanceProfileOf(std::span<const double> z, size_t begin, size_t end,
                                  std::span<const uint32_t> sorted, EnergyScratch& scratch) {
  const size_t length = end - begin;
  const double* v = z.data() + begin;
  DistanceProfile profile;
  profile.before.resize(length);
  profile.after.resize(length);

  // The scratch vectors only grow (an analysis calls this for ever shorter intervals), and
  // every element used below is written before it is read, so nothing is cleared but the tree.
  auto grow = [length](auto& vector) {
    if (vector.size() < length + 1) vector.resize(length + 1);
  };
  grow(scratch.rank);
  grow(scratch.tree);
  grow(scratch.sorted_prefix);

  // Ranks of the interval's values (ties in any order: equal values are at distance 0).
  for (size_t r = 0; r < length; ++r) scratch.rank[sorted[r] - begin] = static_cast<uint32_t>(r);

  // Fenwick tree over ranks; count and sum side by side for locality.
  auto& tree = scratch.tree;
  std::fill(tree.begin(), tree.begin() + static_cast<std::ptrdiff_t>(length + 1),
            EnergyScratch::Node{});
  // One forward pass: each value's distance sum to the values before it from the tree of
  // those already inserted. The sum to the values after it follows without a second tree:
  // the distance sum of a value to the whole interval comes in O(1) from prefix sums over the
  // value order, and less the sum to those before it, it is the sum to those after it.
  auto& sorted_prefix = scratch.sorted_prefix;  // sums of the r smallest values
  sorted_prefix[0] = 0.0;
  for (size_t r = 0; r < length; ++r) sorted_prefix[r + 1] = sorted_prefix[r] + z[sorted[r]];
  const double total = sorted_prefix[length];
  double inserted_sum = 0.0;
  for (size_t t = 0; t < length; ++t) {
    const double x = v[t];
    const uint32_t r = scratch.rank[t];
    double c = 0.0, s = 0.0;  // count and sum of the inserted values with rank <= r
    for (size_t i = r + 1; i > 0; i -= i & (~i + 1)) {
      c += tree[i].count;
      s += tree[i].sum;
    }
    const double col = (c * x - s) + ((inserted_sum - s) - (static_cast<double>(t) - c) * x);
    const double rd = static_cast<double>(r);
    const double below = rd * x - sorted_prefix[r];
    const double above =
        (total - sorted_prefix[r + 1]) - (static_cast<double>(length) - rd - 1.0) * x;
    profile.before[t] = col;
    profile.after[t] = below + above - col;
    for (size_t i = r + 1; i <= length; i += i & (~i + 1)) {
      tree[i].count += 1.0;
      tree[i].sum += x;
    }
    inserted_sum += x;
  }
  return profile;
}

std::pair<DistanceProfile, DistanceProfile> SplitDistanceProfile(
    std::span<const double> z, size_t begin, size_t tau, const DistanceProfile& whole,
    std::span<const uint32_t> left_sorted, std::span<const uint32_t> right_sorted) {
  const auto at = static_cast<std::ptrdiff_t>(tau - begin);
  std::pair<DistanceProfile, DistanceProfile> parts;
  DistanceProfile& left = parts.first;
  DistanceProfile& right = parts.second;
  left.before.assign(whole.before.begin(), whole.before.begin() + at);
  left.after.assign(whole.after.begin(), whole.after.begin() + at);
  right.before.assign(whole.before.begin() + at, whole.before.end());
  right.after.assign(whole.after.begin() + at, whole.after.end());
  // One merge of the two value orders: when a value of one part is taken, the values of the
  // other part taken before it are those below it (count and sum), the rest above it.
  double left_total = 0.0, right_total = 0.0;
  for (uint32_t i : left_sorted) left_total += z[i];
  for (uint32_t j : right_sorted) right_total += z[j];
  const double left_count = static_cast<double>(left_sorted.size());
  const double right_count = static_cast<double>(right_sorted.size());
  auto distance = [](double x, double below_count, double below_sum, double count, double total) {
    return (below_count * x - below_sum) + ((total - below_sum) - (count - below_count) * x);
  };
  size_t l = 0, r = 0;
  double left_below = 0.0, right_below = 0.0;  // sums of the values taken from each part
  while (l < left_sorted.size() || r < right_sorted.size()) {
    const bool take_left = r == right_sorted.size() ||
                           (l < left_sorted.size() && z[left_sorted[l]] < z[right_sorted[r]]);
    if (take_left) {
      const uint32_t i = left_sorted[l++];
      left.after[i - begin] -=
          distance(z[i], static_cast<double>(r), right_below, right_count, right_total);
      left_below += z[i];
    } else {
      const uint32_t j = right_sorted[r++];
      right.before[j - tau] -=
          distance(z[j], static_cast<double>(l), left_below, left_count, left_total);
      right_below += z[j];
    }
  }
  return parts;
}

std::optional<SplitCandidate> BestSplitOfProfile(size_t begin, size_t end, size_t min_segment,
                                                 const DistanceProfile& profile,
                                                 EnergyScratch& scratch) {
  if (min_segment == 0) min_segment = 1;
  if (end <= begin || end - begin < 2 * min_segment) return std::nullopt;
  const size_t length = end - begin;
  auto grow = [length](auto& vector) {
    if (vector.size() < length + 1) vector.resize(length + 1);
  };
  grow(scratch.within_left);
  grow(scratch.within_right);
  // within_left[t] = W(begin, begin + t), within_right[t] = W(begin + t, end), t in
  // [0, length]: W(begin, t + 1) = W(begin, t) + before[t], W(t, end) = W(t + 1, end) + after[t].
  scratch.within_left[0] = 0.0;
  scratch.within_right[length] = 0.0;
  for (size_t t = 0; t < length; ++t) {
    scratch.within_left[t + 1] = scratch.within_left[t] + profile.before[t];
  }
  for (size_t t = length; t-- > 0;) {
    scratch.within_right[t] = scratch.within_right[t + 1] + profile.after[t];
  }

  // The maximum of Q over tau in double: Q = 2 / L (Sxy - m / (n - 1) Sxx - n / (m - 1) Syy)
  // and 2 / L is the same for every tau, so the bracket decides (in long double, QFromSums,
  // it was a tenth of a 10,000-run analysis); q_hat of the best tau in long double as before.
  const double all = scratch.within_left[length];
  const double dl = static_cast<double>(length);
  size_t best_t = 0;
  double best_bracket = 0.0;
  for (size_t t = min_segment; t + min_segment <= length; ++t) {
    const double sxx = scratch.within_left[t];
    const double syy = scratch.within_right[t];
    const double sxy = all - sxx - syy;
    const double n = static_cast<double>(t), m = dl - n;
    double bracket = sxy;
    if (n >= 2) bracket -= m / (n - 1.0) * sxx;
    if (m >= 2) bracket -= n / (m - 1.0) * syy;
    if (best_t == 0 || bracket > best_bracket) {
      best_bracket = bracket;
      best_t = t;
    }
  }
  if (best_t == 0) return std::nullopt;
  const double sxx = scratch.within_left[best_t], syy = scratch.within_right[best_t];
  SplitCandidate best;
  best.tau = begin + best_t;
  best.kappa = end;
  best.q_hat = static_cast<double>(QFromSums(all - sxx - syy, sxx, syy, static_cast<double>(best_t),
                                             dl - static_cast<double>(best_t)));
  return best;
}

}  // namespace devtime::detect
