#include "services/collector/analyze/attribution.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace devtime::analyze {
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

std::vector<OpDelta> AttributeOps(const RunFigures& good, const RunFigures& bad) {
  const double run_delta = bad.total_us - good.total_us;
  std::vector<OpDelta> deltas;
  for (const std::string& op : KeysOfBoth(good.op_us, bad.op_us)) {
    OpDelta d{.op = op,
              .before_us = ValueOr0(good.op_us, op),
              .after_us = ValueOr0(bad.op_us, op),
              .before_calls = ValueOr0(good.op_calls, op),
              .after_calls = ValueOr0(bad.op_calls, op)};
    d.delta_us = d.after_us - d.before_us;
    d.share = run_delta != 0.0 ? d.delta_us / run_delta : 0.0;
    if (d.delta_us != 0.0 || d.before_calls != d.after_calls) deltas.push_back(std::move(d));
  }
  // Largest |delta| first; ties by name so the order is stable.
  std::sort(deltas.begin(), deltas.end(), [](const OpDelta& a, const OpDelta& b) {
    if (std::fabs(a.delta_us) != std::fabs(b.delta_us)) {
      return std::fabs(a.delta_us) > std::fabs(b.delta_us);
    }
    return a.op < b.op;
  });
  if (deltas.size() > kMaxAttributedOps) deltas.resize(kMaxAttributedOps);
  return deltas;
}

std::vector<LayerDelta> AttributeLayers(const RunFigures& good, const RunFigures& bad) {
  std::vector<LayerDelta> layers;
  for (const std::string& layer : KeysOfBoth(good.layer_us, bad.layer_us)) {
    LayerDelta d{.layer = layer,
                 .before_us = ValueOr0(good.layer_us, layer),
                 .after_us = ValueOr0(bad.layer_us, layer)};
    d.delta_us = d.after_us - d.before_us;
    layers.push_back(std::move(d));
  }
  std::sort(layers.begin(), layers.end(), [](const LayerDelta& a, const LayerDelta& b) {
    return a.delta_us != b.delta_us ? a.delta_us > b.delta_us : a.layer < b.layer;
  });
  return layers;
}

std::vector<EnvironmentChange> AttributeEnvironment(const RunFigures& good, const RunFigures& bad) {
  std::vector<EnvironmentChange> changes;
  for (const std::string& key : KeysOfBoth(good.environment, bad.environment)) {
    auto before = good.environment.find(key);
    auto after = bad.environment.find(key);
    std::string before_value = before == good.environment.end() ? "" : before->second;
    std::string after_value = after == bad.environment.end() ? "" : after->second;
    if (before_value != after_value) changes.push_back({key, before_value, after_value});
  }
  return changes;
}

}  // namespace

Attribution Attribute(const RunFigures& good, const RunFigures& bad) {
  Attribution attribution;
  attribution.ops = AttributeOps(good, bad);
  attribution.layers = AttributeLayers(good, bad);
  if (!attribution.layers.empty() && attribution.layers.front().delta_us > 0.0) {
    attribution.dominant_layer = attribution.layers.front().layer;
  }
  attribution.environment = AttributeEnvironment(good, bad);
  return attribution;
}

std::string SeverityFor(double relative_change) {
  if (relative_change >= 0.25) return "critical";
  if (relative_change >= 0.05) return "warning";
  return "info";
}

}  // namespace devtime::analyze
