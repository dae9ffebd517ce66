// E-Divisive means candidate search (Matteson & James; reference §B.1–B.2), distance |x - y|
// (alpha = 1), U-statistic normalisation:
//   Q(tau, kappa) = 2/(n+m) Sxy - 2m/((n+m)(n-1)) Sxx - 2n/((n+m)(m-1)) Syy
// with X = z[begin, tau) (n points) and Y = z[tau, kappa) (m points); a term is 0 when its
// side has fewer than 2 points. Two evaluations:
//  - BestSplitKappaFree: argmax over the (tau, kappa) triangle as Otava 0.8 does, in O(L^2)
//    time and O(L) memory (no L x L matrix); ties -> smallest tau, then smallest kappa.
//  - BestSplitKappaFixed: kappa = end (SPA 1.3 / Hunter 0.6 variant), every tau in
//    O(L log L) time and O(L) memory with one rank-indexed Fenwick tree (plus prefix sums in
//    value order); used by the default detector so that a whole 10,000-point history is
//    analysed in a few milliseconds. It is DistanceProfileOf then BestSplitOfProfile; the
//    detector's hierarchical search builds one profile, for the whole history, and each
//    part's from its parent's in O(L) (SplitDistanceProfile): the Fenwick pass at every level
//    of the hierarchy was a third of a 10,000-run analysis.
// Thread-compatible: a scratch object must not be shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace devtime::detect {

struct SplitCandidate {
  size_t tau = 0;    // first index of the right part
  size_t kappa = 0;  // end (exclusive) of the right part used by the maximum
  double q_hat = 0.0;
};

// Q(tau, kappa) straight from the definition, O(n m + n^2 + m^2); for tests and small inputs.
double QHatDirect(std::span<const double> x, std::span<const double> y);

// Best (tau, kappa) with begin < tau < kappa <= end; nullopt when end - begin < 2.
std::optional<SplitCandidate> BestSplitKappaFree(std::span<const double> z, size_t begin,
                                                 size_t end);

// Reusable working storage for BestSplitKappaFixed (sized to the longest interval seen; only
// the first length + 1 elements of each vector mean anything after a call).
struct EnergyScratch {
  struct Node {
    double count = 0.0;
    double sum = 0.0;
  };
  std::vector<uint32_t> rank;
  std::vector<Node> tree;
  std::vector<double> within_left;    // W(begin, t)
  std::vector<double> within_right;   // W(t, end)
  std::vector<double> sorted_prefix;  // sums of the r smallest values
};

// Best tau with begin + min_segment <= tau <= end - min_segment and kappa = end; nullopt
// when no tau qualifies. min_segment >= 1. Ties -> smallest tau.
std::optional<SplitCandidate> BestSplitKappaFixed(std::span<const double> z, size_t begin,
                                                  size_t end, size_t min_segment,
                                                  EnergyScratch& scratch);
// The same with `sorted` = the indices begin..end-1 ordered by value (saves the sort).
std::optional<SplitCandidate> BestSplitKappaFixed(std::span<const double> z, size_t begin,
                                                  size_t end, size_t min_segment,
                                                  std::span<const uint32_t> sorted,
                                                  EnergyScratch& scratch);

// Each value's distance sums inside an interval [begin, end), by position t - begin: to the
// values before it (before[t] = sum over begin <= i < t of |z_t - z_i|) and to those after it
// (after[t] = sum over t < j < end). Everything the kappa-fixed search needs.
struct DistanceProfile {
  std::vector<double> before;
  std::vector<double> after;
};

// The profile of [begin, end) (`sorted` as below), O(L log L).
DistanceProfile DistanceProfileOf(std::span<const double> z, size_t begin, size_t end,
                                  std::span<const uint32_t> sorted, EnergyScratch& scratch);

// The profiles of [begin, tau) and [tau, end) from `whole`, the profile of [begin, end): a
// value of the left part loses its distances to the right part's values from `after`, one of
// the right part its distances to the left part's from `before`; both in one merge of the
// parts' value orders (`left_sorted`, `right_sorted`: their indices ordered by value), O(L).
// Equal to DistanceProfileOf up to rounding.
std::pair<DistanceProfile, DistanceProfile> SplitDistanceProfile(
    std::span<const double> z, size_t begin, size_t tau, const DistanceProfile& whole,
    std::span<const uint32_t> left_sorted, std::span<const uint32_t> right_sorted);

// BestSplitKappaFixed of [begin, end) from its profile, O(L).
std::optional<SplitCandidate> BestSplitOfProfile(size_t begin, size_t end, size_t min_segment,
                                                 const DistanceProfile& profile,
                                                 EnergyScratch& scratch);

}  // namespace devtime::detect
