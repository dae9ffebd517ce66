// Seasonal cycles of the default detector (issue 21): a cycle of a fixed period (a weekly
// pattern of nightly runs, a monthly one) is taken out of the series before the step search,
// so that a step on top of it is tested against the noise, not against the cycle's swing
// (which the shape test otherwise reads as serially dependent noise, and which then hid a 5 %
// step under a 5 % cycle), and located on the deseasonalised levels.
// Internal to devtime::detect. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace devtime::detect {

// The cycle found in x, one value per phase (profile[i % period] is run i's deviation from its
// level, the profile's mean is 0); empty when there is no significant cycle.
// Detection: for each period p in [2, min(kMaxSeasonPeriod, n / 4)], an F-test of the
// first differences of the last 2,000 runs grouped by phase. Differences are used because a step
// moves one difference and no phase; they are winsorised at 4 robust sigmas so that a large step or
// a spike cannot carry a phase. The period with the smallest p is taken when that p, Bonferroni
// corrected over the periods tried, is <= kSeasonPvalue. The profile is then the phase means
// of x less its moving average over one period (the classical decomposition), whose errors
// are those of a mean over n / p runs, not of an integrated difference. O(n x periods).
inline constexpr size_t kMaxSeasonPeriod = 60;
inline constexpr double kSeasonPvalue = 1e-6;
std::vector<double> SeasonalProfile(std::span<const double> x);

}  // namespace devtime::detect
