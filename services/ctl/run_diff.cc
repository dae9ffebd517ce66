#include "services/ctl/run_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "proto/wire/change.h"
#include "proto/wire/names.h"
#include "services/collector/detect/stats.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

bool UsesCpu(const v1::RunSummary& run) {
  return run.identity().device_kind() == v1::DEVICE_KIND_CPU;
}

std::string IdentityValue(const v1::RunIdentity& id, IdentityKey key) {
  switch (key) {
    case IdentityKey::kModel:
      return id.model();
    case IdentityKey::kWorkload:
      return id.workload();
    case IdentityKey::kInstanceType:
      return id.instance_type();
    case IdentityKey::kDevice:
      return wire::DeviceKindName(id.device_kind());
  }
  return "";
}

double PerStep(const v1::RunSummary& run, const v1::OpStat& op, bool cpu, double steps) {
  // Sample i covers steps[i]'s steps: more than one in a bucketed run (run.proto).
  if (!op.step_self_device_us().empty()) {
    return wire::WeightedStepSample(run, op.step_self_device_us()).mean;
  }
  return (cpu ? op.self_cpu_us() : op.self_device_us()) / steps;
}

// The step totals as a sample: device time, or self CPU time for a CPU-only run.
wire::StepSample StepTotalsOf(const v1::RunSummary& run, bool cpu) {
  std::vector<double> totals;
  for (const auto& step : run.steps()) totals.push_back(cpu ? step.cpu_us() : step.device_us());
  return wire::WeightedStepSample(run, totals);
}

}  // namespace

double StepsOf(const v1::RunSummary& run) {
  if (run.steps_size() > 0) return wire::StepsCovered(run);  // a bucket covers several
  if (run.capture().active_steps() > 0) return run.capture().active_steps();
  return 1;
}

std::string BasisOf(const v1::RunIdentity& id) {
  return id.device_kind() == v1::DEVICE_KIND_CPU ? "self CPU" : "device";
}

std::string TimeLabel(const RunDiff& diff) {
  if (diff.before_basis == diff.after_basis) return diff.before_basis + " time per step";
  return "time per step (" + diff.before_basis + " before, " + diff.after_basis + " after)";
}

const char* IdentityKeyName(IdentityKey key) {
  switch (key) {
    case IdentityKey::kModel:
      return "model";
    case IdentityKey::kWorkload:
      return "workload";
    case IdentityKey::kInstanceType:
      return "instance-type";
    case IdentityKey::kDevice:
      return "device";
  }
  return "";
}

std::vector<IdentityDifference> IdentityDifferences(const v1::RunIdentity& before,
                                                    const v1::RunIdentity& after) {
  std::vector<IdentityDifference> differences;
  for (IdentityKey key : kIdentityKeys) {
    std::string was = IdentityValue(before, key), is = IdentityValue(after, key);
    if (was != is) differences.push_back({key, std::move(was), std::move(is)});
  }
  return differences;
}

std::string DifferencesText(const std::vector<IdentityDifference>& differences) {
  auto shown = [](const std::string& value) { return value.empty() ? "unknown" : value; };
  std::string text;
  for (const auto& d : differences) {
    text += (text.empty() ? "" : ", ") + std::string(IdentityKeyName(d.key)) + " " +
            shown(d.before) + " vs " + shown(d.after);
  }
  return text;
}

std::string SeriesText(const v1::RunIdentity& id) {
  return id.model() + "/" + id.workload() +
         (id.instance_type().empty() ? "" : " " + id.instance_type()) + " " +
         wire::DeviceKindName(id.device_kind());
}

RunDiff DiffRuns(const v1::RunSummary& before, const v1::RunSummary& after) {
  RunDiff diff;
  // Each run's times as its series measures them: a comparison across device kinds (only
  // ever on purpose) is labelled so, never passed off as device time.
  const bool before_cpu = UsesCpu(before), after_cpu = UsesCpu(after);
  diff.before_basis = BasisOf(before.identity());
  diff.after_basis = BasisOf(after.identity());
  double before_steps = StepsOf(before), after_steps = StepsOf(after);

  std::map<std::string, OpDelta> ops;
  for (const auto& op : before.ops()) {
    auto& d = ops[op.name()];
    d.name = op.name();
    d.kind = OpDelta::Kind::kRemoved;
    d.before_us = PerStep(before, op, before_cpu, before_steps);
    d.before_calls = static_cast<double>(op.calls()) / before_steps;
  }
  for (const auto& op : after.ops()) {
    auto& d = ops[op.name()];
    d.kind = d.name.empty() ? OpDelta::Kind::kAdded : OpDelta::Kind::kChanged;
    d.name = op.name();
    d.after_us = PerStep(after, op, after_cpu, after_steps);
    d.after_calls = static_cast<double>(op.calls()) / after_steps;
  }
  for (auto& [name, d] : ops) diff.ops.push_back(d);
  std::stable_sort(diff.ops.begin(), diff.ops.end(), [](const OpDelta& a, const OpDelta& b) {
    return std::abs(a.after_us - a.before_us) > std::abs(b.after_us - b.before_us);
  });

  // Over steps: a bucket of k steps (run.proto) is a mean with variance sigma^2 / k, so
  // StepSampleOf weighs it by k, which estimates one step's sigma and the mean over all the
  // steps; n is the steps covered. The degrees of freedom then count steps, not buckets,
  // which makes p a little smaller than an exact test's when buckets are few; the agent
  // sends as many as the message holds (10,000, or ~90 with 20,000 operators' samples),
  // where the t and normal tails differ by little.
  const auto b = StepTotalsOf(before, before_cpu), a = StepTotalsOf(after, after_cpu);
  if (b.entries >= 2 && a.entries >= 2) {
    auto test = detect::PooledTTest(b.mean, b.stddev, b.steps, a.mean, a.stddev, a.steps);
    diff.p_value = std::isnan(test.p) ? (a.mean == b.mean ? 1.0 : 0.0) : test.p;
    diff.tested = true;
  }
  // The whole run: each run's series value, as the collector stores and the detector judges
  // it (proto/wire/change.h), so that compare, check and the report agree with regressions.
  diff.before_us = wire::TimePerStep(before);
  diff.after_us = wire::TimePerStep(after);
  diff.relative_change = wire::ChangeOf(diff.before_us, diff.after_us).fraction;

  std::map<std::string, EnvChange> env;
  for (const auto& [key, value] : before.environment()) env[key] = {key, value, ""};
  for (const auto& [key, value] : after.environment()) {
    auto& change = env[key];
    change.key = key;
    change.after = value;
  }
  for (const auto& [key, change] : env) {
    if (change.before != change.after) diff.environment.push_back(change);
  }
  return diff;
}

bool IsRegression(const RunDiff& diff, const CheckOptions& options) {
  if (diff.relative_change < options.min_change) return false;
  return !diff.tested || diff.p_value <= options.max_p;
}

std::string RenderDiff(const RunDiff& diff, std::size_t max_ops) {
  using Align = TextTable::Align;
  std::string out = TimeLabel(diff) + ": " + ScaledTime(diff.before_us) + " -> " +
                    ScaledTime(diff.after_us) + " (" +
                    FormatChange(wire::ChangeOf(diff.before_us, diff.after_us)) + ")";
  if (diff.tested) {
    char line[128];
    std::snprintf(line, sizeof line, ", p = %.3g (t-test over steps)", diff.p_value);
    out += line;
  }
  out += "\n\n";
  TextTable table(
      {"operator", "", "before/step", "after/step", "delta/step", "delta %", "calls/step"},
      {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
       Align::kRight});
  std::size_t shown = 0;
  for (const auto& op : diff.ops) {
    if (shown++ == max_ops) break;
    const char* kind = op.kind == OpDelta::Kind::kAdded     ? "added"
                       : op.kind == OpDelta::Kind::kRemoved ? "removed"
                                                            : "";
    char calls[64];
    std::snprintf(calls, sizeof calls, "%.3g -> %.3g", op.before_calls, op.after_calls);
    table.AddRow({op.name, kind, op.kind == OpDelta::Kind::kAdded ? "-" : ScaledTime(op.before_us),
                  op.kind == OpDelta::Kind::kRemoved ? "-" : ScaledTime(op.after_us),
                  SignedTime(op.after_us - op.before_us),
                  FormatChange(wire::ChangeOf(op.before_us, op.after_us)), calls});
  }
  out += table.Render();
  if (diff.ops.size() > max_ops) {
    out += "(" + std::to_string(diff.ops.size() - max_ops) + " more operators)\n";
  }
  if (!diff.environment.empty()) {
    out += "\nenvironment changes:\n";
    for (const auto& change : diff.environment) {
      out += "  " + change.key + ": " + (change.before.empty() ? "(absent)" : change.before) +
             " -> " + (change.after.empty() ? "(absent)" : change.after) + "\n";
    }
  }
  return out;
}

}  // namespace devtime::ctl
