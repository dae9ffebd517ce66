#include "services/collector/attribution.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_format.h"
#include "services/collector/notify/payloads.h"

namespace devtime::collector {
namespace {

double ValueOr0(const std::map<std::string, double>& values, const std::string& key) {
  auto it = values.find(key);
  return it == values.end() ? 0.0 : it->second;
}

template <typename Map>
std::set<std::string> KeysOfBoth(const Map& a, const Map& b) {
  std::set<std::string> keys;
  for (const auto& entry : a) keys.insert(entry.first);
  for (const auto& entry : b) keys.insert(entry.first);
  return keys;
}

void AttributeOps(const RunFigures& good, const RunFigures& bad, v1::Attribution& out) {
  const double run_delta = bad.total_us - good.total_us;
  std::vector<v1::OpDelta> deltas;
  for (const std::string& op : KeysOfBoth(good.op_us, bad.op_us)) {
    v1::OpDelta delta;
    delta.set_op(op);
    delta.set_before_us(ValueOr0(good.op_us, op));
    delta.set_after_us(ValueOr0(bad.op_us, op));
    delta.set_delta_us(delta.after_us() - delta.before_us());
    delta.set_before_calls(ValueOr0(good.op_calls, op));
    delta.set_after_calls(ValueOr0(bad.op_calls, op));
    delta.set_share(run_delta != 0.0 ? delta.delta_us() / run_delta : 0.0);
    if (delta.delta_us() != 0.0 || delta.before_calls() != delta.after_calls()) {
      deltas.push_back(std::move(delta));
    }
  }
  // Largest |delta| first; ties by name so the order is stable.
  std::sort(deltas.begin(), deltas.end(), [](const v1::OpDelta& a, const v1::OpDelta& b) {
    if (std::fabs(a.delta_us()) != std::fabs(b.delta_us())) {
      return std::fabs(a.delta_us()) > std::fabs(b.delta_us());
    }
    return a.op() < b.op();
  });
  if (deltas.size() > kMaxAttributedOps) deltas.resize(kMaxAttributedOps);
  for (auto& delta : deltas) *out.add_ops() = std::move(delta);
}

void AttributeLayers(const RunFigures& good, const RunFigures& bad, v1::Attribution& out) {
  std::vector<v1::LayerDelta> layers;
  for (const std::string& layer : KeysOfBoth(good.layer_us, bad.layer_us)) {
    v1::LayerDelta delta;
    delta.set_layer(layer);
    delta.set_before_us(ValueOr0(good.layer_us, layer));
    delta.set_after_us(ValueOr0(bad.layer_us, layer));
    delta.set_delta_us(delta.after_us() - delta.before_us());
    layers.push_back(std::move(delta));
  }
  std::sort(layers.begin(), layers.end(), [](const v1::LayerDelta& a, const v1::LayerDelta& b) {
    return a.delta_us() != b.delta_us() ? a.delta_us() > b.delta_us() : a.layer() < b.layer();
  });
  if (!layers.empty() && layers.front().delta_us() > 0.0) {
    out.set_dominant_layer(layers.front().layer());
  }
  for (auto& layer : layers) *out.add_layers() = std::move(layer);
}

void AttributeEnvironment(const RunFigures& good, const RunFigures& bad, v1::Attribution& out) {
  for (const std::string& key : KeysOfBoth(good.environment, bad.environment)) {
    auto before = good.environment.find(key);
    auto after = bad.environment.find(key);
    std::string before_value = before == good.environment.end() ? "" : before->second;
    std::string after_value = after == bad.environment.end() ? "" : after->second;
    if (before_value == after_value) continue;
    auto* change = out.add_environment();
    change->set_key(key);
    change->set_before(before_value);
    change->set_after(after_value);
  }
}

}  // namespace

v1::Attribution Attribute(const RunFigures& good, const RunFigures& bad) {
  v1::Attribution attribution;
  AttributeOps(good, bad, attribution);
  AttributeLayers(good, bad, attribution);
  AttributeEnvironment(good, bad, attribution);
  return attribution;
}

std::string SeverityFor(double relative_change) {
  if (relative_change >= 0.25) return "critical";
  if (relative_change >= 0.05) return "warning";
  return "info";
}

std::string Summarize(const v1::Regression& regression) {
  std::string what = regression.metric() == "cpu_us_per_step" ? "CPU" : "device";
  std::string text = absl::StrFormat(
      "%s/%s%s: %s time per step %+.1f %% (%.1f -> %.1f us)", regression.model(),
      regression.workload(),
      regression.instance_type().empty() ? "" : " on " + regression.instance_type(), what,
      100.0 * regression.relative_change(), regression.before(), regression.after());
  std::string top = notify::TopOperators(regression.attribution(), 3);
  if (!top.empty()) text += "; top: " + top;
  std::string env = notify::EnvironmentChanges(regression.attribution());
  if (!env.empty()) text += "; changed: " + env;
  return text;
}

}  // namespace devtime::collector
