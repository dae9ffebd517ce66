#include "agents/contract/run_summary_builder.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "agents/contract/contract_fit.h"
#include "proto/wire/json.h"
#include "proto/wire/limits.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

// The trace library names its enums as the wire does (trace_summary.h).
v1::DeviceKind ToWire(trace::DeviceKind kind) {
  return wire::DeviceKindFromName(std::string(trace::DeviceKindName(kind)));
}

v1::Layer ToWire(trace::Layer layer) {
  return wire::LayerFromName(std::string(trace::LayerName(layer)));
}

// torch 1.13's legacy profiler truncates every duration to whole microseconds, so a parent's
// self time (its duration minus its children's) can come out a few µs below zero, in torch's
// own key_averages() too. The wire contract has no negative totals: such a self time is 0 (the
// per-step samples keep it, down to the contract's rounding floor: SampleFloor).
double NotNegative(double us) { return us < 0 ? 0 : us; }

std::string FirstNonEmpty(std::initializer_list<std::string> candidates) {
  for (const auto& c : candidates) {
    if (!c.empty()) return c;
  }
  return "";
}

std::string Lookup(const std::map<std::string, std::string>& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? "" : it->second;
}

// A repair the builder made so that the collector accepts the run: a warning in the run.
struct Repair {
  std::string kind;  // snake_case (run.proto's CaptureWarning.kind)
  std::string message;
};

// "a, b, c and 4 more": the first few of `items`, for a warning that must stay short.
std::string Examples(const std::vector<std::string>& items) {
  constexpr std::size_t kShown = 3;
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) {
    text += (i == 0 ? "" : ", ") + std::string("'") + items[i] + "'";
  }
  if (items.size() > kShown) text += " and " + std::to_string(items.size() - kShown) + " more";
  return text;
}

// Text fields other than operator names (identity, environment, capture, kernel names):
// fitted with FitText, and the fields that needed it named in one warning.
class TextFields {
 public:
  std::string Fit(const std::string& field, const std::string& text, std::size_t max_bytes) {
    FittedText fitted = FitText(text, max_bytes);
    if (fitted.escaped || fitted.cut) repaired_.push_back(field);
    return std::move(fitted.text);
  }
  void Report(std::vector<Repair>* repairs) const {
    if (repaired_.empty()) return;
    repairs->push_back(
        {"text_repaired", std::to_string(repaired_.size()) +
                              " text fields held control or bidirectional formatting characters "
                              "or were longer than their limit; sent escaped (\\xHH, \\uHHHH) "
                              "or cut: " +
                              Examples(repaired_)});
  }

 private:
  std::vector<std::string> repaired_;
};

void FillIdentity(v1::RunIdentity* id, const trace::TraceSummary& summary, const RunLabels& labels,
                  TextFields* text) {
  const auto& env = summary.environment;
  auto fit = [&](const char* field, const std::string& value) {
    return text->Fit(std::string("identity.") + field, value, wire::kMaxIdentityBytes);
  };
  id->set_run_id(labels.run_id.empty() ? NewRunId() : labels.run_id);
  id->set_job(fit("job", labels.job));
  id->set_model(fit("model", FirstNonEmpty({labels.model, Lookup(env, "model"), "adhoc"})));
  id->set_workload(fit("workload", FirstNonEmpty({labels.workload, Lookup(env, "workload"),
                                                  labels.fallback_workload, "unnamed"})));
  id->set_host(fit("host", FirstNonEmpty({labels.host, HostName()})));
  id->set_instance_type(
      fit("instance_type", FirstNonEmpty({labels.instance_type, Lookup(env, "instance_type")})));
  id->set_device_kind(ToWire(summary.device_kind));
}

void FillCapture(v1::CaptureSettings* capture, const trace::TraceSummary& summary,
                 TextFields* text) {
  capture->set_wait_steps(summary.capture.wait_steps);
  capture->set_warmup_steps(summary.capture.warmup_steps);
  capture->set_active_steps(summary.capture.active_steps);
  capture->set_synchronized(summary.capture.synchronized);
  capture->set_events_dropped(summary.capture.events_dropped);
  capture->set_trace_format(
      text->Fit("capture.trace_format", summary.source_format, wire::kMaxReasonBytes));
  auto torch = Lookup(summary.environment, "torch");
  if (!torch.empty()) {
    capture->set_profiler(
        text->Fit("capture.profiler", "torch.profiler " + torch, wire::kMaxReasonBytes));
  }
}

// The first kMaxEnvironmentEntries entries (by key), keys and values fitted; a key that two
// original keys fit to is kept once (the first).
void FillEnvironment(v1::RunSummary* run, const trace::TraceSummary& summary, TextFields* text,
                     std::vector<Repair>* repairs) {
  auto& out = *run->mutable_environment();
  for (const auto& [key, value] : summary.environment) {
    if (out.size() == wire::kMaxEnvironmentEntries) break;
    const std::string field = "environment[" + wire::PrintableText(key, 64) + "]";
    std::string fitted_key = text->Fit(field + " key", key, wire::kMaxEnvironmentKeyBytes);
    if (fitted_key.empty() || out.count(fitted_key)) continue;
    out[fitted_key] = text->Fit(field, value, wire::kMaxEnvironmentValueBytes);
  }
  if (summary.environment.size() > wire::kMaxEnvironmentEntries) {
    repairs->push_back({"environment_cut", "the environment has " +
                                               std::to_string(summary.environment.size()) +
                                               " entries, more than the limit of " +
                                               std::to_string(wire::kMaxEnvironmentEntries) +
                                               ": the first by key are sent"});
  }
}

// One operator row of the run: one of the trace's operators, or several whose fitted names
// are one, or the remainder past the limits.
struct OpRow {
  explicit OpRow(std::string row_name) : name(std::move(row_name)) {}

  std::string name;
  uint64_t calls = 0;
  double self_cpu_us = 0;
  double total_cpu_us = 0;
  double self_device_us = 0;
  double total_device_us = 0;
  std::vector<const trace::OpStats*> sources;
  uint64_t ops = 0;  // the profile's operators summed here (the library's folded row: many)

  void Add(const trace::OpStats& op, uint64_t op_count = 1) {
    ops += op_count;
    calls += op.calls;
    self_cpu_us += NotNegative(op.self_cpu_us);
    total_cpu_us += op.total_cpu_us;
    self_device_us += NotNegative(op.self_device_us);
    total_device_us += op.total_device_us;
    sources.push_back(&op);
  }
  void AddAll(const OpRow& other) {
    const uint64_t before = ops;
    for (const trace::OpStats* op : other.sources) Add(*op, 0);
    ops = before + other.ops;
  }
  bool HasSamples() const {
    return std::any_of(sources.begin(), sources.end(),
                       [](const trace::OpStats* op) { return !op->step_self_device_us.empty(); });
  }
};

// What an operator row costs in the message besides its samples: its name and its numbers
// (tags, a varint and four doubles), a bound rather than the exact encoding.
constexpr std::size_t kOpRowBytes = 64;
// Operator names and numbers may take half the message; the samples and the rest share the
// other half. 20,000 operators with short names need a tenth of it.
constexpr std::size_t kOpRowsBudget = wire::kMaxMessageBytes / 2;

// The trace's operators as rows with names the contract accepts: escaped and cut, each repair
// said once for all names; names that fit to one name make one row.
// The library's own remainder row (SummarizeOptions::max_op_rows), when it made one, goes to
// `*folded` instead: MergeSmallestRows sums into it.
std::vector<OpRow> NamedRows(const trace::TraceSummary& summary, std::vector<Repair>* repairs,
                             std::optional<OpRow>* folded) {
  std::vector<OpRow> rows;
  std::unordered_map<std::string, std::size_t> by_name;
  std::vector<std::string> escaped, cut, merged;
  for (const trace::OpStats& op : summary.ops) {
    if (summary.folded_ops > 0 && op.name == kOtherOperatorsName && !*folded) {
      folded->emplace(kOtherOperatorsName);
      (*folded)->Add(op, summary.folded_ops);
      continue;
    }
    FittedText fitted = FitText(op.name, wire::kMaxOpNameBytes);
    if (fitted.text.empty()) fitted.text = "(unnamed)";  // the contract needs a name
    if (fitted.escaped) escaped.push_back(wire::PrintableText(fitted.text, 96));
    if (fitted.cut) cut.push_back(wire::PrintableText(fitted.text, 96));
    auto [at, added] = by_name.emplace(fitted.text, rows.size());
    if (added) {
      rows.emplace_back(std::move(fitted.text));
    } else {
      merged.push_back(wire::PrintableText(fitted.text, 96));
    }
    rows[at->second].Add(op);
  }
  if (!escaped.empty()) {
    repairs->push_back(
        {"operator_names_escaped", std::to_string(escaped.size()) +
                                       " operator names held control or bidirectional formatting "
                                       "characters; sent escaped (\\xHH, \\uHHHH): " +
                                       Examples(escaped)});
  }
  if (!cut.empty()) {
    repairs->push_back({"operator_names_cut", std::to_string(cut.size()) +
                                                  " operator names were longer than " +
                                                  std::to_string(wire::kMaxOpNameBytes) +
                                                  " bytes; sent cut, marked with their length "
                                                  "and hash: " +
                                                  Examples(cut)});
  }
  if (!merged.empty()) {
    repairs->push_back({"operator_names_merged",
                        std::to_string(merged.size()) +
                            " operators whose escaped or cut names are another's were summed "
                            "into it: " +
                            Examples(merged)});
  }
  return rows;
}

bool MoreTime(const OpRow& a, const OpRow& b) {
  if (a.self_device_us != b.self_device_us) return a.self_device_us > b.self_device_us;
  return a.self_cpu_us > b.self_cpu_us;
}

std::size_t RowBytes(const OpRow& row) { return row.name.size() + kOpRowBytes; }

// At most kMaxOps rows whose names and numbers fit kOpRowsBudget: the rows with the least time
// past that are summed into one row, kOtherOperatorsName (calls, times and samples summed, so
// every total of the run stays exact). `folded`, the library's remainder row when it summed
// operators already (SummarizeOptions::max_op_rows), is that row from the start.
void MergeSmallestRows(std::vector<OpRow>* rows, std::optional<OpRow> folded,
                       std::vector<Repair>* repairs) {
  std::stable_sort(rows->begin(), rows->end(), MoreTime);
  std::size_t all_bytes = 0;
  for (const OpRow& row : *rows) all_bytes += RowBytes(row);
  if (!folded && rows->size() <= wire::kMaxOps && all_bytes <= kOpRowsBudget) return;
  std::size_t kept = 0, bytes = sizeof kOtherOperatorsName + kOpRowBytes;
  while (kept < rows->size() && kept + 1 < wire::kMaxOps &&
         bytes + RowBytes((*rows)[kept]) <= kOpRowsBudget) {
    bytes += RowBytes((*rows)[kept++]);
  }
  OpRow other = folded ? std::move(*folded) : OpRow(kOtherOperatorsName);
  for (std::size_t i = kept; i < rows->size(); ++i) other.AddAll((*rows)[i]);
  const uint64_t merged = other.ops;
  rows->erase(rows->begin() + static_cast<std::ptrdiff_t>(kept), rows->end());
  auto same = std::find_if(rows->begin(), rows->end(),
                           [](const OpRow& row) { return row.name == kOtherOperatorsName; });
  if (same != rows->end()) {
    same->AddAll(other);
  } else {
    rows->push_back(std::move(other));
  }
  repairs->push_back(
      {"operators_merged", "the profile has " + std::to_string(kept + merged) +
                               " operators, more than a run can send (at most " +
                               std::to_string(wire::kMaxOps) + ", in what fits the message): the " +
                               std::to_string(merged) +
                               " with the least time are summed into one row '" +
                               kOtherOperatorsName + "' (calls, times and per-step samples)"});
}

void FillOpRow(v1::OpStat* out, const OpRow& row) {
  out->set_name(row.name);
  out->set_calls(row.calls);
  out->set_self_cpu_us(row.self_cpu_us);
  // Each total includes its self part, whatever the library's rounding (the contract's rule).
  out->set_total_cpu_us(std::max(row.total_cpu_us, row.self_cpu_us));
  out->set_self_device_us(row.self_device_us);
  out->set_total_device_us(std::max(row.total_device_us, row.self_device_us));
}

// The lowest per-step sample the contract takes for a row of `calls` calls: a CPU run's self-CPU
// samples stay exact down to the legacy profiler's rounding (wire::kSelfCpuRoundingUsPerCall),
// so that their mean is the op's time in the steps over the steps, as the agent's table shows
// it; device time is never below 0.
double SampleFloor(const trace::TraceSummary& summary, uint64_t calls) {
  if (summary.device_kind != trace::DeviceKind::kCpu || summary.has_device_time) return 0;
  return -wire::kSelfCpuRoundingUsPerCall * static_cast<double>(calls);
}

// Row `row`'s per-step samples in `buckets`: the mean per step over each bucket's windows, the
// sum over its operators (one value per window when nothing is bucketed). Exact down to
// `floor` (SampleFloor).
void FillSamples(v1::OpStat* out, const OpRow& row, const StepBuckets& buckets, std::size_t windows,
                 double floor) {
  if (!row.HasSamples()) return;
  auto fit = [floor](double us) { return std::max(us, floor); };
  if (row.sources.size() == 1 && !buckets.bucketed()) {  // the common case: copied as it is
    for (double v : row.sources.front()->step_self_device_us) {
      out->add_step_self_device_us(fit(v));
    }
    return;
  }
  std::size_t longest = 0;
  for (const trace::OpStats* op : row.sources) {
    longest = std::max(longest, op->step_self_device_us.size());
  }
  // Samples are one per window; a trace without windows has none to bucket them by.
  const StepBuckets by = windows > 0 ? buckets : StepBuckets(longest, longest);
  const std::size_t placed = windows > 0 ? windows : longest;
  std::vector<double> sums(by.count());
  for (const trace::OpStats* op : row.sources) {
    std::size_t window = 0;
    for (double v : op->step_self_device_us) {
      if (window >= placed) break;  // samples past the run's steps have no step to go to
      sums[by.BucketOf(window++)] += v;
    }
  }
  for (std::size_t b = 0; b < sums.size(); ++b) {
    out->add_step_self_device_us(fit(sums[b] / static_cast<double>(by.Size(b))));
  }
}

// The step totals: numbers repaired when they repeat or overflow, and bucketed as `buckets`
// says (a bucket's first step number, its means per step, and how many steps it covers).
void FillSteps(v1::RunSummary* run, const trace::TraceSummary& summary, const StepBuckets& buckets,
               std::vector<Repair>* repairs) {
  std::vector<uint32_t> numbers;
  numbers.reserve(summary.steps.size());
  for (const auto& step : summary.steps) numbers.push_back(step.step);
  const StepNumbers fitted = FitStepNumbers(numbers);
  if (!fitted.renumbered_because.empty()) {
    repairs->push_back(
        {"steps_renumbered", "the profile's " + fitted.renumbered_because + ": its " +
                                 std::to_string(numbers.size()) + " steps are sent numbered 0 to " +
                                 std::to_string(numbers.size() - 1) + " in the order they ran"});
  }
  for (std::size_t b = 0; b < buckets.count(); ++b) {
    double device_us = 0, cpu_us = 0;
    const std::size_t size = buckets.Size(b);
    for (std::size_t w = buckets.First(b); w < buckets.First(b) + size; ++w) {
      device_us += NotNegative(summary.steps[w].device_us);
      cpu_us += NotNegative(summary.steps[w].cpu_us);
    }
    auto* out = run->add_steps();
    out->set_step(fitted.numbers[buckets.First(b)]);
    out->set_device_us(device_us / static_cast<double>(size));
    out->set_cpu_us(cpu_us / static_cast<double>(size));
    if (buckets.bucketed()) out->set_steps(static_cast<uint32_t>(size));
  }
  if (buckets.bucketed()) {
    repairs->push_back(
        {"steps_bucketed",
         "the profile has " + std::to_string(summary.steps.size()) +
             " steps, more than a run can send (at most " + std::to_string(wire::kMaxSteps) +
             ", and what fits the message): the step totals and per-step samples are sent as " +
             std::to_string(buckets.count()) + " buckets of " +
             std::to_string(buckets.steps_per_bucket()) +
             " contiguous steps, means per step (totals exact; steps[].steps says how many "
             "steps each covers, and tests weigh each bucket by it)"});
  }
}

// The number of step buckets the message has room for: each bucket adds a step entry and one
// sample to every row with samples; `other_bytes` is the rest of the run.
std::size_t BucketsThatFit(std::size_t other_bytes, std::size_t rows_with_samples) {
  constexpr std::size_t kStepEntryBytes = 40;    // a bound on one StepTotal's encoding
  constexpr std::size_t kSamplesFieldBytes = 6;  // a packed field's tag and length, per row
  constexpr std::size_t kMargin = 64 * 1024;
  const std::size_t fixed = other_bytes + rows_with_samples * kSamplesFieldBytes + kMargin;
  if (fixed >= wire::kMaxMessageBytes) return 1;
  const std::size_t per_bucket = kStepEntryBytes + rows_with_samples * sizeof(double);
  const std::size_t fit = (wire::kMaxMessageBytes - fixed) / per_bucket;
  return std::clamp<std::size_t>(fit, 1, std::min(wire::kMaxSteps, wire::kMaxStepSamples));
}

// A bound on what the warnings will take (FillWarnings): the trace's, and the builder's few.
std::size_t WarningBytes(const trace::TraceSummary& summary) {
  constexpr std::size_t kWarningBytes = 80;         // kind, tags and lengths
  std::size_t bytes = 16 * (1024 + kWarningBytes);  // the repairs: a handful, short
  for (std::size_t i = 0; i < summary.warnings.size() && i < wire::kMaxWarnings; ++i) {
    bytes += std::min(summary.warnings[i].size(), wire::kMaxWarningMessageBytes) + kWarningBytes;
  }
  return bytes;
}

// The trace's warnings, then the builder's repairs, kMaxWarnings in all: a repair is never
// the one left out.
void FillWarnings(v1::RunSummary* run, const trace::TraceSummary& summary,
                  const std::vector<Repair>& repairs) {
  const std::size_t room = wire::kMaxWarnings - std::min(repairs.size(), wire::kMaxWarnings);
  const std::size_t kept = std::min(summary.warnings.size(), room);
  for (std::size_t i = 0; i < kept; ++i) {
    auto* out = run->add_warnings();
    out->set_kind(trace::WarningKind(summary.warnings[i]));
    // A warning may quote a file line with a tab or newline, or a name with any character.
    out->set_message(wire::PrintableText(summary.warnings[i], wire::kMaxWarningMessageBytes));
  }
  for (std::size_t i = 0; i < repairs.size() && i < wire::kMaxWarnings; ++i) {
    auto* out = run->add_warnings();
    out->set_kind(repairs[i].kind);
    out->set_message(wire::PrintableText(repairs[i].message, wire::kMaxWarningMessageBytes));
  }
}

// The top kernels by device time (the trace library sorts them), then one row summing the
// rest, so the kernels' total is the trace's whatever its number of distinct names. A
// kernel name may be a whole C++ template instance: cut, as FitText does.
void FillKernels(v1::RunSummary* run, const trace::TraceSummary& summary, TextFields* text) {
  const auto& kernels = summary.kernels;
  std::size_t top = std::min(kernels.size(), wire::kTopKernels);
  for (std::size_t i = 0; i < top; ++i) {
    auto* out = run->add_kernels();
    FittedText name = FitText(kernels[i].name, wire::kMaxKernelNameBytes);
    // Long kernel names are common and cut without a warning; odd characters are not.
    out->set_name(name.escaped ? text->Fit("kernels[" + std::to_string(i) + "].name",
                                           kernels[i].name, wire::kMaxKernelNameBytes)
                               : std::move(name.text));
    out->set_calls(kernels[i].calls);
    out->set_device_us(NotNegative(kernels[i].device_us));
  }
  if (kernels.size() <= top) return;
  auto* other = run->add_kernels();
  other->set_name(wire::kOtherKernelsName);
  uint64_t calls = 0;
  double device_us = 0;
  for (std::size_t i = top; i < kernels.size(); ++i) {
    calls += kernels[i].calls;
    device_us += NotNegative(kernels[i].device_us);
  }
  other->set_calls(calls);
  other->set_device_us(device_us);
}

v1::DeviceJoinMethod ToWireJoinMethod(const std::string& method) {
  if (method == "id") return v1::DEVICE_JOIN_METHOD_ID;
  if (method == "order") return v1::DEVICE_JOIN_METHOD_ORDER;
  if (method == "id+order") return v1::DEVICE_JOIN_METHOD_ID_AND_ORDER;
  return v1::DEVICE_JOIN_METHOD_NONE;
}

void FillDeviceJoin(v1::DeviceJoinCoverage* out, const trace::DeviceJoin& join) {
  out->set_method(ToWireJoinMethod(join.Method()));
  out->set_by_id_executions(join.by_id);
  out->set_by_id_us(NotNegative(join.by_id_us));
  out->set_by_order_executions(join.by_order);
  out->set_by_order_us(NotNegative(join.by_order_us));
  out->set_unjoined_executions(join.unjoined);
  out->set_unjoined_us(NotNegative(join.unjoined_us));
}

// Everything but the operators, steps and warnings.
void FillRunFields(v1::RunSummary* run, const trace::TraceSummary& summary, const RunLabels& labels,
                   TextFields* text, std::vector<Repair>* repairs) {
  FillIdentity(run->mutable_identity(), summary, labels, text);
  *run->mutable_started_at() = wire::ToTimestamp(labels.started_at);
  if (labels.finished_at >= labels.started_at) {
    *run->mutable_finished_at() = wire::ToTimestamp(labels.finished_at);
  }
  if (summary.invalid_reason) {
    run->set_status(v1::RUN_STATUS_INVALID);
    run->set_status_reason(wire::PrintableText(*summary.invalid_reason, wire::kMaxReasonBytes));
  } else {
    run->set_status(v1::RUN_STATUS_OK);
  }
  FillEnvironment(run, summary, text, repairs);
  FillCapture(run->mutable_capture(), summary, text);
  for (const auto& layer : summary.layers) {
    auto* out = run->add_layers();
    out->set_layer(ToWire(layer.layer));
    out->set_time_us(layer.time_us);
  }
  for (const auto& artifact : summary.artifacts) {
    auto* out = run->add_artifacts();
    out->set_kind(artifact.kind);
    out->set_uri("file://" + std::filesystem::absolute(artifact.path).string());
    out->set_size_bytes(artifact.size_bytes);
    out->set_pair_key(artifact.pair_key);
  }
  double unattributed = NotNegative(summary.unattributed_device_us);
  run->set_unattributed_device_us(unattributed);
  // The total includes the unattributed time; rounding in the library's sums must not make
  // it the smaller of the two, which the wire contract forbids.
  run->set_device_total_us(std::max(NotNegative(summary.device_total_us), unattributed));
  FillKernels(run, summary, text);
  if (summary.device_join) FillDeviceJoin(run->mutable_device_join(), *summary.device_join);
}

}  // namespace

v1::RunSummary BuildRunSummary(const trace::TraceSummary& summary, const RunLabels& labels) {
  v1::RunSummary run;
  TextFields text;
  std::vector<Repair> repairs;
  FillRunFields(&run, summary, labels, &text, &repairs);
  std::optional<OpRow> folded;
  std::vector<OpRow> rows = NamedRows(summary, &repairs, &folded);
  MergeSmallestRows(&rows, std::move(folded), &repairs);
  for (const OpRow& row : rows) FillOpRow(run.add_ops(), row);
  text.Report(&repairs);
  // The steps and samples get what room the rest leaves, so that the whole run is one message
  // the collector takes (a warning per repair is a few hundred bytes at most).
  const std::size_t rows_with_samples = static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const OpRow& row) { return row.HasSamples(); }));
  const std::size_t other_bytes = run.ByteSizeLong() + WarningBytes(summary);
  const StepBuckets buckets(summary.steps.size(), BucketsThatFit(other_bytes, rows_with_samples));
  FillSteps(&run, summary, buckets, &repairs);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    FillSamples(run.mutable_ops(static_cast<int>(i)), rows[i], buckets, summary.steps.size(),
                SampleFloor(summary, rows[i].calls));
  }
  FillWarnings(&run, summary, repairs);
  return run;
}

bool IsRepairWarning(const v1::CaptureWarning& warning) {
  static const std::set<std::string, std::less<>> kRepairs = {
      "operator_names_escaped", "operator_names_cut", "operator_names_merged", "operators_merged",
      "steps_renumbered",       "steps_bucketed",     "text_repaired",         "environment_cut"};
  return kRepairs.count(warning.kind()) > 0;
}

namespace {

// `json` (wire::ToJson of one list entry) indented as an entry of a top-level list.
void WriteEntry(const std::string& json, std::ostream& out) {
  std::string_view rest = json;
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    out << "  " << rest.substr(0, eol);
    if (eol == std::string_view::npos) break;
    out << '\n';
    rest.remove_prefix(eol + 1);
  }
}

template <typename Entries>
void WriteList(const Entries& entries, std::ostream& out) {
  if (entries.empty()) {
    out << "[]";
    return;
  }
  out << "[\n";
  for (int i = 0; i < entries.size(); ++i) {
    WriteEntry(wire::ToJson(entries.Get(i)), out);
    out << (i + 1 < entries.size() ? ",\n" : "\n");
  }
  out << " ]";
}

}  // namespace

void WriteRunJson(v1::RunSummary run, std::ostream& out) {
  google::protobuf::RepeatedPtrField<v1::OpStat> ops;
  google::protobuf::RepeatedPtrField<v1::StepTotal> steps;
  ops.Swap(run.mutable_ops());
  steps.Swap(run.mutable_steps());
  // The rest of the run, where the two lists print as top-level empty lists (one space of
  // indent: wire::ToJson's whitespace, which prints every field, empty lists too).
  const std::string shell = wire::ToJson(run);
  const std::string ops_at = "\n \"ops\": []", steps_at = "\n \"steps\": []";
  const std::size_t o = shell.find(ops_at), s = shell.find(steps_at);
  if (o == std::string::npos || s == std::string::npos || s < o) {  // not ToJson's layout
    ops.Swap(run.mutable_ops());
    steps.Swap(run.mutable_steps());
    out << wire::ToJson(run);
    return;
  }
  const std::size_t o_list = o + ops_at.size() - 2, s_list = s + steps_at.size() - 2;
  out << std::string_view(shell).substr(0, o_list);
  WriteList(ops, out);
  out << std::string_view(shell).substr(o_list + 2, s_list - (o_list + 2));
  WriteList(steps, out);
  out << std::string_view(shell).substr(s_list + 2);
}

std::string NewRunId() {
  std::random_device entropy;
  std::array<unsigned char, 16> bytes;
  for (auto& b : bytes) b = static_cast<unsigned char>(entropy());
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace devtime::agent
