// RenderTable() and RenderComparison(): plain-text views of TraceSummary for people.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>
#include <string>

#include "absl/strings/str_format.h"
#include "agents/trace/summary/summarizer.h"
#include "agents/trace/trace_summary.h"
#include "proto/wire/units.h"

namespace devtime::trace {
namespace {

constexpr size_t kNameWidth = 55;  // torch's max_name_column_width
constexpr size_t kFlushBytes = size_t{1} << 16;

// A time as every devtime table writes it (proto/wire/units.h): "403.3 us", "2.355 ms",
// "1.017 s". "us", not "µs": the columns are padded to a width in bytes.
std::string FormatTime(double us) { return wire::ScaledTime(us, "us"); }

std::string SignedTime(double us) { return wire::SignedTime(us, "us"); }

std::string Name(const std::string& name) {
  if (name.size() <= kNameWidth) return name;
  return name.substr(0, kNameWidth - 3) + "...";
}

void AppendNotes(const TraceSummary& s, std::string* out) {
  if (!s.has_device_time) {
    absl::StrAppend(out,
                    "Warning: no device events in this trace, so no device time — profile with "
                    "ProfilerActivity.CUDA / PrivateUse1 (Neuron) to get device time\n");
  }
  for (const std::string& w : s.warnings) absl::StrAppend(out, "Warning: ", w, "\n");
  if (s.invalid_reason) absl::StrAppend(out, "INVALID: ", *s.invalid_reason, "\n");
}

// Per-op device columns only when some device time is attributed to ops (a Neuron system trace
// gives device time per step and per layer, not per op).
bool OpDeviceColumns(const TraceSummary& s) {
  if (!s.has_device_time) return false;
  return std::any_of(s.ops.begin(), s.ops.end(),
                     [](const OpStats& op) { return op.total_device_us > 0; });
}

// Device (else self CPU) time per step: mean, min, max.
struct StepFigures {
  double mean = 0, min = 0, max = 0;
};
StepFigures StepTimes(const TraceSummary& s) {
  StepFigures f;
  if (s.steps.empty()) return f;
  f.min = 1e300;
  f.max = -1e300;
  double sum = 0;
  for (const StepStats& st : s.steps) {
    const double v = s.has_device_time ? st.device_us : st.cpu_us;
    sum += v;
    f.min = std::min(f.min, v);
    f.max = std::max(f.max, v);
  }
  f.mean = sum / static_cast<double>(s.steps.size());
  return f;
}

// The metric a comparison uses for one op.
double Metric(const OpStats& op, bool device) {
  return device ? op.self_device_us : op.self_cpu_us;
}

// A range that marks a step or a phase rather than an operator: ProfilerStep* (its time is the
// operators' inside it) and record_function annotations written "## name ##".
bool IsStepMarker(const std::string& name) {
  if (name == "ProfilerStep*" || ProfilerStepNumber(name)) return true;
  return name.size() > 6 && name.starts_with("## ") && name.ends_with(" ##");
}

// The op's time inside the ProfilerStep windows (what the Step columns show, summed). The
// samples are summed as they are: a self time a few us below 0 from rounding (a parent's
// truncated duration) offsets its neighbours, so the mean is the total over the steps; only the
// figure shown is clamped.
double InSteps(const OpStats& op) { return op.step_self_device_us.Sum(); }

}  // namespace

void RenderTable(const TraceSummary& s, std::ostream& stream) {
  const bool dev = OpDeviceColumns(s);
  const bool steps = !s.steps.empty();
  // Operators first, ranked by the share column's time inside the steps (work before the first
  // step — a model's setup — is not what a step costs), then over the whole trace; the step
  // markers after them, apart: their time is the operators'.
  std::vector<const OpStats*> ops, markers;
  for (const OpStats& op : s.ops) (IsStepMarker(op.name) ? markers : ops).push_back(&op);
  auto by_time = [dev, steps](const OpStats* a, const OpStats* b) {
    if (steps && InSteps(*a) != InSteps(*b)) return InSteps(*a) > InSteps(*b);
    if (Metric(*a, dev) != Metric(*b, dev)) return Metric(*a, dev) > Metric(*b, dev);
    return a->total_cpu_us > b->total_cpu_us;
  };
  std::stable_sort(ops.begin(), ops.end(), by_time);
  std::stable_sort(markers.begin(), markers.end(), by_time);
  const double share_total = dev ? s.device_total_us : s.self_cpu_total_us;

  std::string out;
  absl::StrAppend(
      &out, absl::StrFormat("Source: %s   Device: %s   Steps: %d   Ops: %d\n", s.source_format,
                            DeviceKindName(s.device_kind), s.steps.size(), s.ops.size()));
  std::string header =
      absl::StrFormat("%-55s  %8s  %12s  %12s", "Name", "Calls", "Self CPU", "CPU total");
  if (dev) absl::StrAppend(&header, absl::StrFormat("  %12s  %12s", "Self device", "Device total"));
  absl::StrAppend(&header, absl::StrFormat("  %9s", dev ? "% device" : "% self CPU"));
  if (steps) {
    absl::StrAppend(&header,
                    absl::StrFormat("  %12s  %12s  %12s", "Step mean", "Step min", "Step max"));
  }
  const std::string rule(header.size(), '-');
  absl::StrAppend(&out, rule, "\n", header, "\n", rule, "\n");
  // Self times can come out slightly negative (a child's rounding); they are shown as 0, as
  // the RunSummary stores them (agents/contract/run_summary_builder.cc): one rule everywhere.
  auto self = [](double us) { return FormatTime(std::max(us, 0.0)); };
  auto append_row = [&](const OpStats* op) {
    std::string line = absl::StrFormat("%-55s  %8d  %12s  %12s", Name(op->name), op->calls,
                                       self(op->self_cpu_us), FormatTime(op->total_cpu_us));
    if (dev) {
      absl::StrAppend(&line, absl::StrFormat("  %12s  %12s", self(op->self_device_us),
                                             FormatTime(op->total_device_us)));
    }
    const double mine = std::max(Metric(*op, dev), 0.0);
    absl::StrAppend(&line,
                    absl::StrFormat("  %8.2f%%", share_total > 0 ? 100 * mine / share_total : 0.0));
    if (steps) {
      const StepSamples& v = op->step_self_device_us;
      if (v.empty()) {
        absl::StrAppend(&line, absl::StrFormat("  %12s  %12s  %12s", "-", "-", "-"));
      } else {
        const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
        absl::StrAppend(&line, absl::StrFormat("  %12s  %12s  %12s",
                                               self(InSteps(*op) / static_cast<double>(v.size())),
                                               self(*mn), self(*mx)));
      }
    }
    absl::StrAppend(&out, line, "\n");
    // Written out in 64 KiB pieces: a million rows are ~170 MB of text, which would double the
    // peak memory of a summary that holds a million OpStats (issue 23).
    if (out.size() >= kFlushBytes) {
      stream << out;
      out.clear();
    }
  };
  for (const OpStats* op : ops) append_row(op);
  if (!markers.empty()) {
    absl::StrAppend(&out, rule, "\n", "Step markers and annotations (ranges, not operators):\n");
    for (const OpStats* op : markers) append_row(op);
  }
  absl::StrAppend(&out, rule, "\n");
  absl::StrAppend(&out, "Self CPU time total: ", FormatTime(s.self_cpu_total_us), "\n");
  if (s.has_device_time) {
    absl::StrAppend(&out, "Self device time total: ", FormatTime(s.device_total_us));
    if (s.unattributed_device_us > 0) {
      absl::StrAppend(&out, " (unattributed: ", FormatTime(s.unattributed_device_us), ")");
    }
    absl::StrAppend(&out, "\n");
  }
  if (steps) {
    const StepFigures f = StepTimes(s);
    absl::StrAppend(&out, s.has_device_time ? "Device" : "Self CPU", " time per step (mean of ",
                    s.steps.size(), "): ", FormatTime(f.mean), ", min ", FormatTime(f.min),
                    ", max ", FormatTime(f.max), "\n");
  }
  if (!s.layers.empty()) {
    absl::StrAppend(&out, "Layers:");
    for (size_t i = 0; i < s.layers.size(); ++i) {
      // The layer's name for people: "framework dispatch".
      std::string layer(LayerName(s.layers[i].layer));
      std::replace(layer.begin(), layer.end(), '_', ' ');
      absl::StrAppend(&out, i ? "," : "", " ", layer, " ", FormatTime(s.layers[i].time_us));
    }
    absl::StrAppend(&out, "\n");
  }
  AppendNotes(s, &out);
  stream << out;
}

std::string RenderTable(const TraceSummary& s) {
  std::ostringstream out;
  RenderTable(s, out);
  return std::move(out).str();
}

std::string RenderComparison(const TraceSummary& before, const TraceSummary& after) {
  const bool dev = OpDeviceColumns(before) && OpDeviceColumns(after);
  const bool per_step = !before.steps.empty() && !after.steps.empty();
  const double div_b = per_step ? static_cast<double>(before.steps.size()) : 1.0;
  const double div_a = per_step ? static_cast<double>(after.steps.size()) : 1.0;

  struct Row {
    std::string name;
    const OpStats* b = nullptr;
    const OpStats* a = nullptr;
    double tb = 0, ta = 0;
  };
  std::map<std::string, Row> by_name;
  for (const OpStats& op : before.ops) {
    Row& r = by_name[op.name];
    r.name = op.name;
    r.b = &op;
    r.tb = Metric(op, dev) / div_b;
  }
  for (const OpStats& op : after.ops) {
    Row& r = by_name[op.name];
    r.name = op.name;
    r.a = &op;
    r.ta = Metric(op, dev) / div_a;
  }
  std::vector<Row> rows;
  for (auto& [name, r] : by_name) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return std::fabs(x.ta - x.tb) > std::fabs(y.ta - y.tb);
  });

  const std::string metric =
      std::string(dev ? "self device" : "self CPU") + (per_step ? " per step" : " total");
  std::string out;
  double total_b = 0, total_a = 0;
  for (const Row& r : rows) {
    total_b += r.tb;
    total_a += r.ta;
  }
  absl::StrAppend(&out, absl::StrFormat("Comparing %s: before %s (%d steps), after %s (%d steps)\n",
                                        metric, FormatTime(total_b), before.steps.size(),
                                        FormatTime(total_a), after.steps.size()));
  if (total_b > 0) {
    absl::StrAppend(&out, absl::StrFormat("Change: %s (%+.2f%%)\n", SignedTime(total_a - total_b),
                                          100 * (total_a - total_b) / total_b));
  }
  const std::string header =
      absl::StrFormat("%-8s  %-55s  %12s  %12s  %12s  %9s  %14s", "Status", "Name", "Before",
                      "After", "Delta", "Delta %", "Calls (delta)");
  const std::string rule(header.size(), '-');
  absl::StrAppend(&out, rule, "\n", header, "\n", rule, "\n");
  size_t unchanged = 0;
  for (const Row& r : rows) {
    const uint64_t cb = r.b ? r.b->calls : 0;
    const uint64_t ca = r.a ? r.a->calls : 0;
    const char* status = !r.b ? "added" : !r.a ? "removed" : "changed";
    if (r.a && r.b && cb == ca && r.ta == r.tb) {
      ++unchanged;
      continue;
    }
    const std::string pct =
        r.tb > 0 ? absl::StrFormat("%+.1f%%", 100 * (r.ta - r.tb) / r.tb) : std::string("n/a");
    const long long dc = static_cast<long long>(ca) - static_cast<long long>(cb);
    absl::StrAppend(
        &out, absl::StrFormat("%-8s  %-55s  %12s  %12s  %12s  %9s  %6d (%+d)\n", status,
                              Name(r.name), r.b ? FormatTime(r.tb) : "-",
                              r.a ? FormatTime(r.ta) : "-", SignedTime(r.ta - r.tb), pct, ca, dc));
  }
  absl::StrAppend(&out, rule, "\n");
  if (unchanged > 0) absl::StrAppend(&out, unchanged, " ops unchanged\n");
  if (before.has_device_time && after.has_device_time && !dev && per_step) {
    const double b = StepTimes(before).mean;
    const double a = StepTimes(after).mean;
    absl::StrAppend(&out, "Device time per step (not attributed to ops): before ", FormatTime(b),
                    ", after ", FormatTime(a), ", change ", SignedTime(a - b),
                    b > 0 ? absl::StrFormat(" (%+.2f%%)", 100 * (a - b) / b) : std::string(), "\n");
  }
  if (before.has_device_time != after.has_device_time) {
    absl::StrAppend(&out, "Note: only one side has device time; compared self CPU time\n");
  }
  if (before.invalid_reason)
    absl::StrAppend(&out, "Before is INVALID: ", *before.invalid_reason, "\n");
  if (after.invalid_reason)
    absl::StrAppend(&out, "After is INVALID: ", *after.invalid_reason, "\n");
  return out;
}

}  // namespace devtime::trace
