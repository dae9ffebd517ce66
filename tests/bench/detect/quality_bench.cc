// Detection quality of the default detector and the Otava reference mode, side by side
// (issue 5 item 7, issue 13 item 5, issue 21 item 5). Usage: detect_quality_bench
// [--series N] [--seed-base S] [--smoke] [--only TEXT] [--mode default|otava|both] [--misses]
// [--dump-misses DIR] [--help]; an unknown or malformed argument is an error (exit 2).
// --seed-base shifts every scenario's seed (scenario k uses S + k; default S = 1), so a change
// can be checked on data it was not tuned on. --only runs just the scenarios whose name
// contains TEXT (their seeds unchanged), to re-measure a few at scale; --mode runs one
// detector only (default both). --misses lists the series whose steps miss a label or add a
// false one; --dump-misses also writes each such series to DIR/<seed>-<series>.txt, one value
// per line (nan for a missing night), for `devtimectl detect DIR/<file>` (DIR is created).
// Each target the issues set (default mode) is printed after the figures with PASS or FAIL,
// and the last line counts the failures.
// Columns: precision, recall, F1 and false step change points per 10,000 points of the step
// findings (+-2 runs); steps and drifts found per series; for scenarios with a labelled drift,
// the share of drifting series with exactly one drift finding and no step ("1 drift"), the
// median distance of its start from the labelled start, and the share with at least one
// drift finding ("drift"); for scenarios with labelled steps, the share of series whose every
// labelled step is found within +-2 runs ("all+-2"). Otava has no drift finding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/numbers.h"
#include "services/collector/detect/detect.h"
#include "tests/bench/detect/generator.h"

namespace {

using devtime::detect::DetectorOptions;
using devtime::detect::FindingKind;
using devtime::detect::Mode;
using devtime::detect::Point;
using devtime::detect::bench::Generate;
using devtime::detect::bench::Scenario;
using devtime::detect::bench::Score;

// A target the issues set for a scenario: one figure of the default detector's row compared
// with a bound. The printout shows each beside the figures with PASS or FAIL, and its text is
// made from the check itself, so the two cannot disagree.
enum class Figure { kF1, kRecall, kFalsePer10k, kStepsPerSeries, kAllWithin, kAnyDrift, kOneDrift };
struct Check {
  Figure figure;
  bool at_most;  // figure <= bound; else figure >= bound
  double bound;
};
Check AtLeast(Figure f, double bound) { return {f, false, bound}; }
Check AtMost(Figure f, double bound) { return {f, true, bound}; }

struct Row {
  Scenario scenario;
  std::vector<Check> checks;  // what the issues ask (default mode)
};

struct Quality {
  Score steps;
  size_t series = 0, step_findings = 0, drift_findings = 0;
  size_t drifting = 0, one_drift = 0;   // labelled drifts; those found as exactly one drift
  size_t any_drift = 0;                 // labelled drifts with at least one drift finding
  size_t labelled = 0, all_within = 0;  // series with labelled steps; all found within +-2
  std::vector<double> start_errors;     // |found start - labelled start| of those
  double StepsPerSeries() const {
    return series ? static_cast<double>(step_findings) / static_cast<double>(series) : 0.0;
  }
  double DriftsPerSeries() const {
    return series ? static_cast<double>(drift_findings) / static_cast<double>(series) : 0.0;
  }
};

// Lists series `i` of `scenario` when its step findings miss a label or add a false step, and
// says whether it did.
bool PrintMisses(const Scenario& scenario, size_t i, const std::vector<size_t>& labels,
                 const std::vector<size_t>& steps, const std::vector<size_t>& drift_starts) {
  Score alone;
  alone.Add(labels, steps, 2);
  if (alone.false_negatives == 0 && alone.false_positives == 0) return false;
  auto list = [](const std::vector<size_t>& v) {
    std::string text;
    for (size_t x : v) text += (text.empty() ? "" : " ") + std::to_string(x);
    return "[" + text + "]";
  };
  std::printf("  miss %s #%zu (seed %llu): labels %s steps %s drifts %s\n", scenario.name.c_str(),
              i, static_cast<unsigned long long>(scenario.seed), list(labels).c_str(),
              list(steps).c_str(), list(drift_starts).c_str());
  return true;
}

bool g_misses = false;   // --misses
std::string g_dump_dir;  // --dump-misses

// Writes a missed series for replaying it through `devtimectl detect` (--dump-misses).
void DumpSeries(const Scenario& scenario, size_t i, const std::vector<Point>& points) {
  const std::string path =
      g_dump_dir + "/" + std::to_string(scenario.seed) + "-" + std::to_string(i) + ".txt";
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  for (const auto& p : points) {
    if (std::isnan(p.value)) {
      std::fputs("nan\n", file);  // not "-nan", which the reader would refuse
    } else {
      std::fprintf(file, "%.17g\n", p.value);
    }
  }
  std::fclose(file);
}

Quality Evaluate(const Scenario& scenario, Mode mode) {
  DetectorOptions options;
  options.mode = mode;
  Quality q;
  for (const auto& series : Generate(scenario)) {
    const size_t i = q.series;
    const auto findings = devtime::detect::Analyze(series.points, options);
    if (!findings.ok()) {
      std::fprintf(stderr, "analyze failed: %s\n",
                   std::string(findings.status().message()).c_str());
      std::exit(1);
    }
    std::vector<size_t> steps;
    std::vector<size_t> drift_starts;
    for (const auto& f : *findings) {
      (f.kind == FindingKind::kStep ? steps : drift_starts).push_back(f.index);
    }
    q.steps.Add(series.changes, steps, 2);
    if (g_misses && mode == Mode::kDefault) {
      if (PrintMisses(scenario, i, series.changes, steps, drift_starts) && !g_dump_dir.empty()) {
        DumpSeries(scenario, i, series.points);
      }
    }
    if (!series.changes.empty()) {
      ++q.labelled;
      Score alone;
      alone.Add(series.changes, steps, 2);
      q.all_within += alone.false_negatives == 0 ? 1 : 0;
    }
    for (const auto& p : series.points) q.steps.points += std::isfinite(p.value) ? 1 : 0;
    ++q.series;
    q.step_findings += steps.size();
    q.drift_findings += drift_starts.size();
    if (series.drift_total != 0.0) {
      ++q.drifting;
      q.any_drift += drift_starts.empty() ? 0 : 1;
      if (drift_starts.size() == 1 && steps.size() == series.changes.size()) {
        ++q.one_drift;
        const size_t d = drift_starts[0];
        q.start_errors.push_back(static_cast<double>(
            d > series.drift_start ? d - series.drift_start : series.drift_start - d));
      }
    }
  }
  return q;
}

// Two oracles told where every labelled step's neighbours are (the labels around it, or the
// ends), and the share of the labelled steps each puts within +-2 runs: practical ceilings for
// locating steps on these data (issue 13 item 3 asks 97 % for 2 % steps at 1 % noise). Each
// step is located alone between its neighbours (a one-step model there):
//  - least squares: the maximum-likelihood position for one step in Gaussian noise;
//  - posterior window: the Bayes choice for "within +-2 runs" under the generator's own
//    prior (the step uniform in [neighbour + min_gap, next neighbour - min_gap], the ends
//    counting as neighbours; flat priors on both levels): the position whose +-2
//    neighbourhood holds the most posterior mass exp(-RSS(t) / 2 sigma^2) / sqrt(n1 n2).
//    Nothing can do better on average; the detector's refinement (analysis.cc, Locate) is
//    this estimator within +-refine_window runs of its candidate, between the change points it
//    found, plus a small weight on the centre run.
struct Oracles {
  double least_squares = 0.0, posterior_window = 0.0;
};
Oracles OraclesWithin2(const Scenario& scenario) {
  size_t least_squares = 0, window = 0, total = 0;
  auto within2 = [](size_t at, size_t label) {
    return (at > label ? at - label : label - at) <= 2;
  };
  for (const auto& series : Generate(scenario)) {
    std::vector<double> x;
    std::vector<size_t> index;
    for (size_t i = 0; i < series.points.size(); ++i) {
      if (!std::isfinite(series.points[i].value)) continue;
      x.push_back(series.points[i].value);
      index.push_back(i);
    }
    std::vector<double> prefix(x.size() + 1, 0.0), squares(x.size() + 1, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      prefix[i + 1] = prefix[i] + x[i];
      squares[i + 1] = squares[i] + x[i] * x[i];
    }
    // Valid positions of the labels, with the ends as neighbours.
    std::vector<size_t> bounds = {0};
    for (size_t label : series.changes) {
      bounds.push_back(
          static_cast<size_t>(std::lower_bound(index.begin(), index.end(), label) - index.begin()));
    }
    bounds.push_back(x.size());
    for (size_t k = 1; k + 1 < bounds.size(); ++k) {
      const size_t a = bounds[k - 1], b = bounds[k + 1], label = series.changes[k - 1];
      const size_t lo_index = k == 1 ? 0 : series.changes[k - 2];
      const size_t hi_index = k + 1 == bounds.size() - 1 ? series.points.size() : series.changes[k];
      const double n = static_cast<double>(b - a);
      const double sum = prefix[b] - prefix[a];
      const double total_ss = squares[b] - squares[a] - sum * sum / n;
      std::vector<double> rss(b - a, total_ss);
      double best = -1.0;
      size_t at = a + 1;
      for (size_t t = a + 1; t < b; ++t) {
        const double left = static_cast<double>(t - a), right = n - left;
        const double shift = (prefix[b] - prefix[t]) / right - (prefix[t] - prefix[a]) / left;
        const double between = shift * shift * left * right / n;  // explained sum of squares
        rss[t - a] = total_ss - between;
        if (between > best) {
          best = between;
          at = t;
        }
      }
      least_squares += within2(index[at], label) ? 1 : 0;
      // The posterior over the generator's range of positions (input indices).
      const double variance = rss[at - a] / (n - 2.0);
      std::vector<double> mass(b - a, 0.0);
      for (size_t t = a + 1; t < b; ++t) {
        if (index[t] < lo_index + scenario.min_gap || index[t] + scenario.min_gap > hi_index)
          continue;
        const double left = static_cast<double>(t - a);
        mass[t - a] =
            std::exp(-(rss[t - a] - rss[at - a]) / (2.0 * variance)) / std::sqrt(left * (n - left));
      }
      double best_mass = -1.0;
      size_t window_at = at;
      for (size_t t = a + 1; t < b; ++t) {
        double around = 0.0;
        for (size_t j = t > a + 2 ? t - 2 : a; j <= std::min(b - 1, t + 2); ++j) {
          around += mass[j - a];
        }
        if (around > best_mass) {
          best_mass = around;
          window_at = t;
        }
      }
      window += within2(index[window_at], label) ? 1 : 0;
      ++total;
    }
  }
  const double count = std::max<double>(1.0, static_cast<double>(total));
  return {static_cast<double>(least_squares) / count, static_cast<double>(window) / count};
}

// Steps in Gaussian noise only (the oracles' model): no dirt, drift, season or walk.
bool Clean(const Scenario& s) {
  return s.min_steps >= 1 && s.outlier_rate == 0.0 && s.bimodal_rate == 0.0 &&
         s.missing_rate == 0.0 && s.drift_max == 0.0 && s.labelled_drift_hi == 0.0 &&
         s.season_amplitude == 0.0 && s.random_walk == 0.0;
}

// "97.5%": part of whole, one decimal.
std::string Percent(size_t part, size_t whole) {
  char text[16];
  std::snprintf(
      text, sizeof text, "%.1f%%",
      100.0 * static_cast<double>(part) / static_cast<double>(std::max<size_t>(1, whole)));
  return text;
}

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Value(const Quality& q, Figure f) {
  const double share = 100.0;  // the shares are compared in percent, as printed
  switch (f) {
    case Figure::kF1:
      return q.steps.F1();
    case Figure::kRecall:
      return q.steps.Recall();
    case Figure::kFalsePer10k:
      return q.steps.FalsePer10k();
    case Figure::kStepsPerSeries:
      return q.StepsPerSeries();
    case Figure::kAllWithin:
      return share * static_cast<double>(q.all_within) /
             static_cast<double>(std::max<size_t>(1, q.labelled));
    case Figure::kAnyDrift:
      return share * static_cast<double>(q.any_drift) /
             static_cast<double>(std::max<size_t>(1, q.drifting));
    case Figure::kOneDrift:
      return share * static_cast<double>(q.one_drift) /
             static_cast<double>(std::max<size_t>(1, q.drifting));
  }
  return 0.0;
}

// "F1 >= 0.99", "FP/10k <= 0", "all+-2 >= 95%".
std::string Describe(const Check& c) {
  static constexpr const char* kNames[] = {"F1",     "recall", "FP/10k", "steps/series",
                                           "all+-2", "drift",  "1drift"};
  const bool percent = c.figure == Figure::kAllWithin || c.figure == Figure::kAnyDrift ||
                       c.figure == Figure::kOneDrift;
  char text[64];
  std::snprintf(text, sizeof text, "%s %s %g%s", kNames[static_cast<int>(c.figure)],
                c.at_most ? "<=" : ">=", c.bound, percent ? "%" : "");
  return text;
}

// The figure is compared as printed (rounded to its printed digits), so that a PASS never
// rests on a digit the table does not show.
bool Holds(const Quality& q, const Check& c) {
  const bool percent = c.figure == Figure::kAllWithin || c.figure == Figure::kAnyDrift ||
                       c.figure == Figure::kOneDrift;
  const double scale = percent ? 10.0 : c.figure == Figure::kFalsePer10k ? 100.0 : 1000.0;
  const double v = std::round(Value(q, c.figure) * scale) / scale;
  return c.at_most ? v <= c.bound : v >= c.bound;
}

constexpr const char* kUsage =
    "usage: detect_quality_bench [--series N] [--seed-base S] [--smoke] [--only TEXT]\n"
    "                            [--mode default|otava|both] [--misses] [--dump-misses DIR]\n"
    "  --series N         series per scenario (default 200; --smoke: 5)\n"
    "  --seed-base S      scenario k uses seed S + k (default 1): data nothing was tuned on\n"
    "  --only TEXT        only the scenarios whose name contains TEXT (seeds unchanged)\n"
    "  --mode M           one detector, default or otava (default: both)\n"
    "  --misses           list the series whose steps miss a label or add a false one\n"
    "  --dump-misses DIR  also write each to DIR/<seed>-<series>.txt for devtimectl detect\n";

struct Args {
  size_t series = 200;
  uint64_t seed_base = 1;
  std::string only;
  std::vector<Mode> modes = {Mode::kDefault, Mode::kOtava};
};

// The options, or the exit status where main must stop (0 after --help, 2 on an error, which
// names the argument: a typo must not run the default minutes-long benchmark instead).
std::variant<Args, int> ParseArgs(int argc, char** argv) {
  Args args;
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "detect_quality_bench: %s\n%s", message.c_str(), kUsage);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool takes_value = flag == "--series" || flag == "--seed-base" || flag == "--only" ||
                             flag == "--mode" || flag == "--dump-misses";
    if (takes_value && i + 1 >= argc) return fail(flag + " needs a value");
    const char* value = takes_value ? argv[++i] : nullptr;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (flag == "--smoke") {
      args.series = 5;
    } else if (flag == "--series" || flag == "--seed-base") {
      // A whole unsigned number: "--series 1e3" or "--series -5" is an error, not 1 or a huge
      // count.
      uint64_t n = 0;
      const bool series = flag == "--series";
      if (!absl::SimpleAtoi(value, &n) || (series && n == 0)) {
        return fail(flag + ": '" + value + "' is not a " +
                    (series ? "positive whole number" : "whole number"));
      }
      if (series) {
        args.series = n;
      } else {
        args.seed_base = n;
      }
    } else if (flag == "--only") {
      args.only = value;
    } else if (flag == "--misses") {
      g_misses = true;
    } else if (flag == "--dump-misses") {
      g_misses = true;
      g_dump_dir = value;
      std::error_code error;
      std::filesystem::create_directories(g_dump_dir, error);
      if (error) return fail("cannot create " + g_dump_dir + ": " + error.message());
    } else if (flag == "--mode") {
      const std::string m = value;
      if (m != "default" && m != "otava" && m != "both") {
        return fail("--mode: '" + m + "' is not default, otava or both");
      }
      args.modes.clear();
      if (m != "otava") args.modes.push_back(Mode::kDefault);
      if (m != "default") args.modes.push_back(Mode::kOtava);
    } else {
      return fail("unknown argument '" + flag + "'");
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = ParseArgs(argc, argv);
  if (const int* status = std::get_if<int>(&parsed)) return *status;
  const Args& args = std::get<Args>(parsed);
  const size_t series = args.series;
  const uint64_t seed_base = args.seed_base;
  const std::string& only = args.only;
  const std::vector<Mode>& modes = args.modes;
  std::vector<Row> rows;
  auto add = [&](const char* name, std::vector<Check> checks, auto&& tweak) {
    Scenario s;
    s.name = name;
    s.series = series;
    s.seed = seed_base + rows.size();
    tweak(s);
    rows.push_back({s, std::move(checks)});
  };
  using F = Figure;
  add("2% step, 1% noise", {AtLeast(F::kRecall, 0.90), AtLeast(F::kF1, 0.93)},
      [](Scenario& s) { s.StepSize(0.02, 0.02); });
  add("5% step, 1% noise", {AtLeast(F::kF1, 0.97)}, [](Scenario&) {});
  add("5% step, 2% noise", {}, [](Scenario& s) { s.Noise(0.02, 0.02); });
  add("5% step, 1% noise, 2% outlier runs", {AtLeast(F::kF1, 0.99)},
      [](Scenario& s) { s.Dirt(0.02, 0, 0); });
  add("5% step, 1% noise, 30% bimodal runs", {}, [](Scenario& s) { s.Dirt(0, 0.3, 0); });
  add("5% step, 1% noise, 10% missing nights", {}, [](Scenario& s) { s.Dirt(0, 0, 0.1); });
  add("1% step, 0.5% noise", {}, [](Scenario& s) { s.StepSize(0.01, 0.01).Noise(0.005, 0.005); });
  // The mixed fleets: 1-5 steps of [step_lo, step_hi] at [0.5 %, noise_hi] noise, with
  // outliers, bimodal runs, missing nights and a slow drift.
  auto mix = [](double step_lo, double step_hi, double noise_hi) {
    return [=](Scenario& s) {
      s.Steps(1, 5).StepSize(step_lo, step_hi).Noise(0.005, noise_hi).Dirt(0.01, 0.1, 0.05);
      s.drift_max = 0.01;
    };
  };
  add("mix: 1-50% steps, 0.5-5% noise, 1-5 steps, outliers, bimodal, missing, drift", {},
      mix(0.01, 0.5, 0.05));
  add("mix, only steps >= 3x noise (10-50% steps, 0.5-3% noise)", {}, mix(0.1, 0.5, 0.03));
  add("stationary, 1% noise", {AtMost(F::kFalsePer10k, 0)}, [](Scenario& s) { s.Steps(0, 0); });
  add("stationary, 0.5-5% noise, 2% outliers, 10% bimodal, 5% missing",
      {AtMost(F::kFalsePer10k, 0)},
      [](Scenario& s) { s.Steps(0, 0).Noise(0.005, 0.05).Dirt(0.02, 0.1, 0.05); });
  add("stationary + slow drift (<= 1% over the series)", {AtMost(F::kFalsePer10k, 0)},
      [](Scenario& s) {
        s.Steps(0, 0);
        s.drift_max = 0.01;
      });
  // Shapes that are not steps (issue 13).
  add("drift +2..20% over the last 100-300 runs, 1% noise", {AtMost(F::kStepsPerSeries, 0)},
      [](Scenario& s) { s.Steps(0, 0).LabelledDrift(0.02, 0.20); });
  add("drift +2..20%, 0.5-3% noise, outliers, bimodal, missing", {AtMost(F::kStepsPerSeries, 0)},
      [](Scenario& s) {
        s.Steps(0, 0).LabelledDrift(0.02, 0.20).Noise(0.005, 0.03).Dirt(0.01, 0.1, 0.05);
      });
  add("trend (<= 10% over the series) + 3 steps of 5%, 1% noise", {AtLeast(F::kF1, 0.97)},
      [](Scenario& s) { s.drift_max = 0.10; });
  add("drift +5..20% over 100-300 runs + 2 steps of 5-10%, 1% noise", {},
      [](Scenario& s) { s.Steps(2, 2).StepSize(0.05, 0.10).LabelledDrift(0.05, 0.20); });
  // Seasonal cycles and random walks without steps (neither may read as a staircase of
  // steps), named from their parameters so that a name cannot disagree with them.
  auto seasonal = [&](size_t period, double amplitude, const char* note = "") {
    char name[96];
    std::snprintf(name, sizeof name, "seasonal, period %zu, amplitude %g%%, 1%% noise%s", period,
                  100 * amplitude, note);
    add(name, {AtMost(F::kStepsPerSeries, 1)},
        [=](Scenario& s) { s.Steps(0, 0).Season(period, amplitude); });
  };
  auto random_walk = [&](double per_run, double noise, std::vector<Check> checks) {
    char name[96];
    std::snprintf(name, sizeof name, "random walk, %g%% per run, %g%% noise", 100 * per_run,
                  100 * noise);
    checks.push_back(AtMost(F::kStepsPerSeries, 1));
    add(name, std::move(checks), [=](Scenario& s) {
      s.Steps(0, 0).Noise(noise, noise);
      s.random_walk = per_run;
    });
  };
  seasonal(7, 0.03);
  seasonal(12, 0.05);
  add("seasonal, period 12, amplitude 3% + 3 steps of 10%, 1% noise", {},
      [](Scenario& s) { s.StepSize(0.10, 0.10).Season(12, 0.03); });
  random_walk(0.003, 0.01, {AtMost(F::kFalsePer10k, 2)});
  random_walk(0.01, 0.005, {});
  add("short: 10-30 runs, one 10% step (>= 5 runs from the ends), 1% noise", {}, [](Scenario& s) {
    s.Lengths(10, 30).Steps(1, 1).StepSize(0.10, 0.10);
    s.min_gap = 5;
  });
  add("short: 10-30 runs, stationary, 1-3% noise", {},
      [](Scenario& s) { s.Lengths(10, 30).Steps(0, 0).Noise(0.01, 0.03); });
  // Appended last so that the other scenarios keep their seeds.
  add("2% step, 1% noise, one step per series", {AtLeast(F::kAllWithin, 97)},
      [](Scenario& s) { s.Steps(1, 1).StepSize(0.02, 0.02); });
  seasonal(52, 0.05, " (a long cycle)");
  // Data nobody tuned for (issue 21), appended so that the others keep their seeds: a step
  // under a drift of the other sign (the hard case: the step cancels part of the creep) and of
  // the same sign, a long excursion, a trend that turns flat with a step, seasons with a step.
  add("drift +5..10% over the series + one 5% step down, 1% noise",
      {AtLeast(F::kAllWithin, 95), AtLeast(F::kAnyDrift, 95)}, [](Scenario& s) {
        s.Steps(1, 1).Signs(-1, +1).LabelledDrift(0.05, 0.10);
        s.drift_runs_lo = s.drift_runs_hi = 300;
      });
  add("drift -5..10% over the series + one 5% step up, 1% noise",
      {AtLeast(F::kAllWithin, 95), AtLeast(F::kAnyDrift, 95)}, [](Scenario& s) {
        s.Steps(1, 1).Signs(+1, -1).LabelledDrift(0.05, 0.10);
        s.drift_runs_lo = s.drift_runs_hi = 300;
      });
  add("drift +5..10% over the series + one 5% step up, 1% noise",
      {AtLeast(F::kAllWithin, 95), AtLeast(F::kAnyDrift, 95)}, [](Scenario& s) {
        s.Steps(1, 1).Signs(+1, +1).LabelledDrift(0.05, 0.10);
        s.drift_runs_lo = s.drift_runs_hi = 300;
      });
  add("90-run excursion of -80%, 1% noise", {AtLeast(F::kAllWithin, 95)},
      [](Scenario& s) { s.Steps(0, 0).Excursion(-0.8, 90); });
  add("90-run excursion of -80%, 1-5% noise, outliers, bimodal, missing", {}, [](Scenario& s) {
    s.Steps(0, 0).Excursion(-0.8, 90).Noise(0.01, 0.05).Dirt(0.01, 0.1, 0.05);
  });
  add("trend +10..20% over the first 100-200 runs, then flat, + one 5% step",
      {AtLeast(F::kF1, 0.95)}, [](Scenario& s) {
        s.Steps(1, 1).LabelledDrift(0.10, 0.20);
        s.drift_runs_lo = 100;
        s.drift_runs_hi = 200;
        s.drift_turns = true;
      });
  add("seasonal, period 7, amplitude 3% + one 5% step, 1% noise", {AtLeast(F::kAllWithin, 95)},
      [](Scenario& s) { s.Steps(1, 1).Season(7, 0.03); });
  add("seasonal, period 12, amplitude 5% + one 5% step, 1% noise", {AtLeast(F::kAllWithin, 95)},
      [](Scenario& s) { s.Steps(1, 1).Season(12, 0.05); });
  // A creep that started a month or two ago: the regression a nightly watch exists for.
  add("recent creep: drift +5..10% over the last 30-60 runs, 1% noise",
      {AtLeast(F::kAnyDrift, 95), AtMost(F::kStepsPerSeries, 0.03)}, [](Scenario& s) {
        s.Steps(0, 0).LabelledDrift(0.05, 0.10);
        s.drift_runs_lo = 30;
        s.drift_runs_hi = 60;
      });
  // A turn: the series crept 5-10 % one way (an improvement, or a regression) and then as much
  // back over the last 100-200 runs; over the whole no creep is monotone.
  add("turn: drift 5..10% one way, then as much back over the last 100-200 runs, 1% noise",
      {AtLeast(F::kAnyDrift, 95), AtMost(F::kStepsPerSeries, 0.03)}, [](Scenario& s) {
        s.Steps(0, 0).LabelledDrift(0.05, 0.10);
        s.drift_runs_hi = 200;
        s.counter_creep = 1.0;
      });

  std::printf(
      "Detection quality: %zu series per scenario (300 runs unless said), +-2 runs margin, seed "
      "base %llu\n",
      series, static_cast<unsigned long long>(seed_base));
  std::printf("%-70s %-8s %5s %5s %5s %7s %6s %6s %6s %5s %6s %6s  %s\n", "scenario", "mode", "P",
              "R", "F1", "FP/10k", "steps", "drifts", "1drift", "start", "drift", "all+-2",
              "target");
  size_t failed = 0;
  for (const Row& row : rows) {
    if (row.scenario.name.find(only) == std::string::npos) continue;
    for (Mode mode : modes) {
      const Quality q = Evaluate(row.scenario, mode);
      const Score& s = q.steps;
      std::string one_drift = "-", start = "-", any_drift = "-", all_within = "-";
      if (q.labelled > 0) all_within = Percent(q.all_within, q.labelled);
      if (q.drifting > 0) {
        one_drift = Percent(q.one_drift, q.drifting);
        any_drift = Percent(q.any_drift, q.drifting);
        const double e = Median(q.start_errors);
        start = std::isnan(e) ? "-" : std::to_string(static_cast<int>(e));
      }
      std::string target;
      if (mode == Mode::kDefault) {
        for (const Check& c : row.checks) {
          const bool ok = Holds(q, c);
          failed += ok ? 0 : 1;
          target += (target.empty() ? "" : ", ") + Describe(c) + (ok ? " PASS" : " FAIL");
        }
      }
      if (mode == Mode::kDefault && Clean(row.scenario)) {
        char oracle[96];
        const Oracles o = OraclesWithin2(row.scenario);
        std::snprintf(oracle, sizeof oracle,
                      " (oracles within +-2: least squares %.3f, posterior window %.3f)",
                      o.least_squares, o.posterior_window);
        target += oracle;
      }
      std::printf("%-70s %-8s %5.3f %5.3f %5.3f %7.2f %6.2f %6.2f %6s %5s %6s %6s  %s\n",
                  row.scenario.name.c_str(), mode == Mode::kDefault ? "default" : "otava",
                  s.Precision(), s.Recall(), s.F1(), s.FalsePer10k(), q.StepsPerSeries(),
                  q.DriftsPerSeries(), one_drift.c_str(), start.c_str(), any_drift.c_str(),
                  all_within.c_str(), target.c_str());
    }
  }
  // The verdict on every target checked (a smoke run's few series are not a measurement: it
  // prints it, but only a wrong run, not a FAIL, makes it exit non-zero).
  std::printf("targets: %zu failed\n", failed);
  return 0;
}
