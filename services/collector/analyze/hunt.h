// devtime::analyze — culprit hunts (issue 25), the pure part: which culprit run comes next
// and what a run's level means, from the hunt's record alone (v1::Hunt), so a collector that
// restarts, or another collector, carries on from what is stored. store/hunt_store.h runs it.
//
// The plan, replayed from the decisive runs (fast = at the baseline, slow = at the current
// level) in order:
//   1. every changed key the job can pin, pinned back to the last good run's value: slow
//      → no culprit ("not the environment": a code or data change);
//   2. one key: it is the culprit. Two: each alone pinned back (the others at their current
//      values); exactly one fast → the culprit, else inconclusive. More: a binary split (the
//      first half pinned back: fast → the culprit is in it, else in the other half);
//   3. the culprit's ordered values (its source, resolved by the agent in step 1), when there
//      are some between the good and the bad value: a bisection, the culprit alone pinned.
// A run between both levels is repeated once (then inconclusive); a failed or lost run is
// re-queued up to kMaxAttempts times; the budget bounds the runs that came back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/time/time.h"
#include "devtime/v1/jobs.pb.h"
#include "devtime/v1/regressions.pb.h"

namespace devtime::analyze {

struct HuntOptions {
  bool enabled = true;  // false: no hunt starts by itself (devtimectl regressions hunt does)
  uint32_t budget = 8;  // culprit runs per regression
  absl::Duration poll = absl::Seconds(2);
  // A requested run that has not come back by then is lost and re-queued; zero = the job's
  // timeout plus 5 minutes.
  absl::Duration run_timeout = absl::ZeroDuration();
};

inline constexpr int kMaxAttempts = 3;  // of one culprit run (failed or lost), then inconclusive
inline constexpr double kDecisiveZ = 3.0;

// One culprit run's level: its series value (µs per step) and the noise of one step.
struct CulpritLevel {
  double value = 0;
  double step_stddev = 0;
  double steps = 0;
};

// "fast", "slow" or "ambiguous", and the distance (in sigmas) to the level it is not at.
struct Judgement {
  std::string judgement;
  double z = 0;
};
// Judges `level` against the hunt's baseline and current level, with the gate's noise: the
// baseline runs' robust sigma and the run's own standard error. Fast or slow is decided at
// the levels' geometric mean (times scale with a host's load), decisive only kDecisiveZ
// sigmas from the level it is not at.
Judgement Judge(const v1::Hunt& hunt, const CulpritLevel& level);

struct NextRun {
  std::map<std::string, std::string> pins;
  std::string purpose;
  std::vector<v1::PinRange> resolve;  // value sources to run (step 1 only)
};
struct HuntVerdict {
  v1::HuntState state = v1::HUNT_STATE_INCONCLUSIVE;
  std::string verdict;
  std::string culprit_key;
  double confidence = 0;
  std::string first_bad_value, last_good_value;
};

// The next culprit run, or the verdict. `sources`: the keys whose pin has a value source.
// The hunt's last run must be judged (not waiting).
std::variant<NextRun, HuntVerdict> Plan(const v1::Hunt& hunt,
                                        const std::vector<std::string>& sources);

// Writes the verdict into the hunt (state, text, figures, finished_at = `now`).
void Finish(v1::Hunt& hunt, const HuntVerdict& verdict, absl::Time now);

// "hunting", "culprit_found", "no_culprit", "inconclusive".
std::string HuntStateName(v1::HuntState state);

}  // namespace devtime::analyze
