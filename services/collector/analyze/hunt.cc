#include "services/collector/analyze/hunt.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "proto/wire/time.h"
#include "proto/wire/units.h"

namespace devtime::analyze {
namespace {

// What the replay of the decisive runs needs, and what it gathers for the verdict.
struct Replay {
  const v1::Hunt& hunt;
  std::vector<const v1::HuntRun*> decisive;
  size_t next = 0;
  double min_z = 1e9;

  // The next decisive run, or nullptr when the plan needs a new one.
  const v1::HuntRun* Take() {
    if (next >= decisive.size()) return nullptr;
    const v1::HuntRun* run = decisive[next++];
    min_z = std::min(min_z, run->z());
    return run;
  }
};

const v1::EnvironmentChange* KeyOf(const v1::Hunt& hunt, const std::string& key) {
  for (const auto& change : hunt.keys()) {
    if (change.key() == key) return &change;
  }
  return nullptr;
}

std::map<std::string, std::string> PinnedBack(const v1::Hunt& hunt,
                                              const std::vector<std::string>& keys) {
  std::map<std::string, std::string> pins;
  for (const std::string& key : keys) pins[key] = KeyOf(hunt, key)->before();
  return pins;
}

std::string Change(const v1::EnvironmentChange& c) {
  return c.key() + " " + c.before() + " → " + c.after();
}

double Confidence(double z) { return 1.0 - 0.5 * std::erfc(z / std::sqrt(2.0)); }

HuntVerdict Inconclusive(const std::string& why) {
  return {.state = v1::HUNT_STATE_INCONCLUSIVE, .verdict = "inconclusive (" + why + ")"};
}

// The key's ordered values strictly between its good and bad value (the source's list
// trimmed to them); empty when the source gave none or does not contain both ends.
std::vector<std::string> Between(const v1::Hunt& hunt, const v1::EnvironmentChange& change) {
  auto it = hunt.values().find(change.key());
  if (it == hunt.values().end()) return {};
  std::vector<std::string> values = absl::StrSplit(it->second, ' ', absl::SkipEmpty());
  auto good = std::find(values.begin(), values.end(), change.before());
  auto begin = good == values.end() ? values.begin() : good + 1;
  auto bad = std::find(begin, values.end(), change.after());
  return {begin, bad};
}

std::string Level(double us) { return wire::ScaledTime(us); }

constexpr char kEverything[] = "everything pinned back";

// The value sources the first run asks the agent to run (the keys with a source).
std::vector<v1::PinRange> Ranges(const v1::Hunt& hunt, const std::vector<std::string>& sources) {
  std::vector<v1::PinRange> ranges;
  for (const auto& change : hunt.keys()) {
    if (std::find(sources.begin(), sources.end(), change.key()) == sources.end()) continue;
    v1::PinRange range;
    range.set_key(change.key());
    range.set_good(change.before());
    range.set_bad(change.after());
    ranges.push_back(range);
  }
  return ranges;
}

HuntVerdict Culprit(Replay& replay, const v1::HuntRun& pinned_back,
                    const v1::EnvironmentChange& change, const std::string& others) {
  const v1::Hunt& hunt = replay.hunt;
  HuntVerdict verdict{.state = v1::HUNT_STATE_CULPRIT_FOUND, .culprit_key = change.key()};
  verdict.confidence = Confidence(replay.min_z);
  verdict.verdict =
      absl::StrFormat("culprit: %s — pinned back %s (baseline %s), current %s; confidence %.1f %%",
                      Change(change), Level(pinned_back.value()), Level(hunt.baseline()),
                      Level(hunt.current()), 100.0 * verdict.confidence);
  if (!others.empty()) absl::StrAppend(&verdict.verdict, "; ", others);
  return verdict;
}

std::variant<NextRun, HuntVerdict> Bisect(Replay& replay, const v1::HuntRun& pinned_back,
                                          const v1::EnvironmentChange& change,
                                          const std::string& others) {
  std::vector<std::string> seq = Between(replay.hunt, change);
  if (seq.empty()) return Culprit(replay, pinned_back, change, others);
  seq.insert(seq.begin(), change.before());
  seq.push_back(change.after());
  size_t lo = 0, hi = seq.size() - 1;  // lo is fast, hi is slow
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    const v1::HuntRun* run = replay.Take();
    if (!run) {
      return NextRun{.pins = {{change.key(), seq[mid]}},
                     .purpose = absl::StrCat("bisect ", change.key(), " at ", seq[mid], " (",
                                             hi - lo - 1, " values left)")};
    }
    (run->judgement() == "fast" ? lo : hi) = mid;
  }
  HuntVerdict verdict = Culprit(replay, pinned_back, change, others);
  verdict.first_bad_value = seq[hi];
  verdict.last_good_value = seq[lo];
  absl::StrAppend(&verdict.verdict, "; first bad value ", seq[hi], " (last good ", seq[lo], ")");
  return verdict;
}

// A run that is not decisive at the end of the record: repeat it, or give up.
std::optional<std::variant<NextRun, HuntVerdict>> Repeat(const v1::Hunt& hunt) {
  int ambiguous = 0, failed = 0;
  const v1::HuntRun* last = nullptr;
  for (int i = hunt.runs_size(); i-- > 0;) {
    const v1::HuntRun& run = hunt.runs(i);
    if (run.judgement() == "fast" || run.judgement() == "slow") break;
    if (last && run.purpose() != last->purpose()) break;
    last = &run;
    (run.judgement() == "ambiguous" ? ambiguous : failed) += 1;
  }
  if (!last) return std::nullopt;
  if (ambiguous >= 2) {
    return Inconclusive(absl::StrFormat("%s: %s twice, between the baseline %s and the current %s",
                                        last->purpose(), Level(last->value()),
                                        Level(hunt.baseline()), Level(hunt.current())));
  }
  if (failed >= kMaxAttempts) {
    return Inconclusive(absl::StrCat(last->purpose(), ": the culprit run ", last->judgement(), " ",
                                     failed, " times",
                                     last->reason().empty() ? "" : ": " + last->reason()));
  }
  NextRun again{.pins = {last->pins().begin(), last->pins().end()}, .purpose = last->purpose()};
  return again;
}

}  // namespace

Judgement Judge(const v1::Hunt& hunt, const CulpritLevel& level) {
  const double b = hunt.baseline(), a = hunt.current(), v = level.value;
  const double se = level.steps > 0 ? level.step_stddev / std::sqrt(level.steps) : 0.0;
  // The gate's noise: the baseline runs' spread and this run's own; never below 0.5 % of the
  // baseline, so a perfectly quiet series does not make every wobble decisive.
  const double sigma = std::max(std::hypot(hunt.sigma(), se), 0.005 * std::fabs(b));
  const double z_fast = (a - v) / sigma;  // how far below the current level
  const double z_slow = (v - b) / sigma;  // how far above the baseline
  // Which level the run is at: the nearer by ratio. A host's load scales times, and the
  // current level is one run: at +100 % load it stands twice as high, and a culprit run back
  // at the current level on a quieter minute fell below the arithmetic midpoint.
  const double midpoint = a > 0 && b > 0 ? std::sqrt(a * b) : (a + b) / 2;
  if (v < midpoint && z_fast >= kDecisiveZ) return {"fast", z_fast};
  if (v >= midpoint && z_slow >= kDecisiveZ) return {"slow", z_slow};
  return {"ambiguous", std::min(z_fast, z_slow)};
}

std::variant<NextRun, HuntVerdict> Plan(const v1::Hunt& hunt,
                                        const std::vector<std::string>& sources) {
  if (auto repeat = Repeat(hunt)) {
    if (std::holds_alternative<NextRun>(*repeat) && hunt.runs_spent() >= hunt.budget()) {
      return Inconclusive(absl::StrCat("the budget of ", hunt.budget(),
                                       " culprit runs was spent before a verdict"));
    }
    // A repeated first run still brings the value sources.
    if (auto* run = std::get_if<NextRun>(&*repeat); run && run->purpose == kEverything) {
      run->resolve = Ranges(hunt, sources);
    }
    return *repeat;
  }
  Replay replay{hunt};
  for (const auto& run : hunt.runs()) {
    if (run.judgement() == "fast" || run.judgement() == "slow") replay.decisive.push_back(&run);
  }
  std::vector<std::string> keys;
  for (const auto& change : hunt.keys()) keys.push_back(change.key());
  auto plan = [&]() -> std::variant<NextRun, HuntVerdict> {
    const v1::HuntRun* all = replay.Take();
    if (!all) {
      NextRun first{.pins = PinnedBack(hunt, keys), .purpose = kEverything};
      first.resolve = Ranges(hunt, sources);
      return first;
    }
    if (all->judgement() == "slow") {
      HuntVerdict verdict{.state = v1::HUNT_STATE_NO_CULPRIT};
      verdict.confidence = Confidence(replay.min_z);
      verdict.verdict = absl::StrFormat(
          "not the environment: everything pinned back (%s) is still slow, %s against the "
          "baseline %s and the current %s → a code or data change; confidence %.1f %%",
          absl::StrJoin(keys, ", "), Level(all->value()), Level(hunt.baseline()),
          Level(hunt.current()), 100.0 * verdict.confidence);
      return verdict;
    }
    if (keys.size() == 1) return Bisect(replay, *all, hunt.keys(0), "");
    if (keys.size() == 2) {
      std::vector<const v1::HuntRun*> fast;
      std::vector<std::string> culprits, innocent;
      for (const std::string& key : keys) {
        const v1::HuntRun* run = replay.Take();
        if (!run) {
          return NextRun{.pins = PinnedBack(hunt, {key}), .purpose = key + " pinned back alone"};
        }
        if (run->judgement() == "fast") {
          fast.push_back(run);
          culprits.push_back(key);
        } else {
          innocent.push_back(key);
        }
      }
      if (culprits.size() != 1) {
        return Inconclusive(culprits.empty()
                                ? "no single key: each of " + absl::StrJoin(keys, ", ") +
                                      " pinned back alone is still slow; together they explain it"
                                : "each of " + absl::StrJoin(keys, ", ") +
                                      " pinned back alone brings it back");
      }
      const std::string others =
          "not " + Change(*KeyOf(hunt, innocent[0])) + " (pinned back alone still slow)";
      return Bisect(replay, *fast[0], *KeyOf(hunt, culprits[0]), others);
    }
    std::vector<std::string> suspects = keys;
    const v1::HuntRun* last_fast = all;
    while (suspects.size() > 1) {
      std::vector<std::string> half(suspects.begin(), suspects.begin() + suspects.size() / 2);
      const v1::HuntRun* run = replay.Take();
      if (!run) {
        return NextRun{.pins = PinnedBack(hunt, half),
                       .purpose = absl::StrJoin(half, ", ") + " pinned back (" +
                                  std::to_string(suspects.size()) + " suspects)"};
      }
      if (run->judgement() == "fast") {
        suspects = half;
        last_fast = run;
      } else {
        suspects.erase(suspects.begin(), suspects.begin() + suspects.size() / 2);
      }
    }
    return Bisect(replay, *last_fast, *KeyOf(hunt, suspects[0]), "");
  };
  auto next = plan();
  if (std::holds_alternative<NextRun>(next) && hunt.runs_spent() >= hunt.budget()) {
    return Inconclusive(
        absl::StrCat("the budget of ", hunt.budget(), " culprit runs was spent before a verdict"));
  }
  return next;
}

void Finish(v1::Hunt& hunt, const HuntVerdict& verdict, absl::Time now) {
  hunt.set_state(verdict.state);
  hunt.set_verdict(verdict.verdict);
  hunt.set_culprit_key(verdict.culprit_key);
  hunt.set_confidence(verdict.confidence);
  hunt.set_first_bad_value(verdict.first_bad_value);
  hunt.set_last_good_value(verdict.last_good_value);
  *hunt.mutable_finished_at() = wire::ToTimestamp(absl::ToChronoTime(now));
}

std::string HuntStateName(v1::HuntState state) {
  switch (state) {
    case v1::HUNT_STATE_HUNTING:
      return "hunting";
    case v1::HUNT_STATE_CULPRIT_FOUND:
      return "culprit_found";
    case v1::HUNT_STATE_NO_CULPRIT:
      return "no_culprit";
    case v1::HUNT_STATE_INCONCLUSIVE:
      return "inconclusive";
    default:
      return "none";
  }
}

}  // namespace devtime::analyze
