#include "agents/monitor/monitor_config.h"

#include <cmath>

#include "nlohmann/json.hpp"

namespace devtime::agent::monitor {
namespace {

absl::Status Problem(const std::string& source, const YAML::Node& node, const std::string& key,
                     const std::string& what) {
  return absl::InvalidArgumentError(source + ":" + std::to_string(node.Mark().line + 1) +
                                    ": monitor." + key + ": " + what);
}

absl::Status ReadApps(const YAML::Node& list, const std::string& source, MonitorConfig& config) {
  if (!list.IsSequence()) return Problem(source, list, "apps", "must be a list");
  for (const auto& entry : list) {
    AppMapping app;
    for (const auto& kv : entry) {
      const auto key = kv.first.as<std::string>();
      const auto value = kv.second.as<std::string>();
      if (key == "tag") {
        app.tag = value;
      } else if (key == "tag_regex") {
        app.tag_regex = value;
      } else if (key == "model") {
        app.model = value;
      } else if (key == "workload") {
        app.workload = value;
      } else {
        return Problem(source, kv.first, "apps." + key, "unknown setting");
      }
    }
    if (app.model.empty() || (app.tag.empty() == app.tag_regex.empty())) {
      return Problem(source, entry, "apps",
                     "each entry needs model and exactly one of tag, tag_regex");
    }
    if (app.workload.empty()) app.workload = "serving";
    if (!app.tag_regex.empty()) {
      try {
        app.regex = std::regex(app.tag_regex, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return Problem(source, entry, "apps.tag_regex", std::string("bad regex: ") + e.what());
      }
    }
    config.apps.push_back(std::move(app));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MonitorConfig> ParseMonitorConfig(const YAML::Node& node,
                                                 const std::string& source) {
  MonitorConfig config;
  config.enabled = true;
  if (!node.IsMap()) return Problem(source, node, "", "must be a mapping");
  try {
    for (const auto& kv : node) {
      const auto key = kv.first.as<std::string>();
      const YAML::Node& value = kv.second;
      if (key == "apps") {
        if (auto s = ReadApps(value, source, config); !s.ok()) return s;
      } else if (key == "environment") {
        if (!value.IsMap()) return Problem(source, value, key, "must be a mapping");
        for (const auto& e : value) {
          config.environment[e.first.as<std::string>()] = e.second.as<std::string>();
        }
      } else if (key == "enabled") {
        config.enabled = value.as<bool>();
      } else if (key == "command") {
        config.command = value.as<std::string>();
      } else if (key == "config_file") {
        config.config_file = value.as<std::string>();
      } else if (key == "period_seconds") {
        config.period_seconds = value.as<double>();
        if (!(config.period_seconds >= 1 && config.period_seconds <= 3600)) {
          return Problem(source, value, key, "must be 1..3600");
        }
      } else if (key == "window_seconds") {
        config.window_seconds = value.as<double>();
        if (!(config.window_seconds >= 60 && config.window_seconds <= 86400)) {
          return Problem(source, value, key, "must be 60..86400");
        }
      } else if (key == "replay_start") {
        config.replay_start = value.as<int64_t>();
      } else if (key == "max_backoff_seconds") {
        config.max_backoff_seconds = value.as<double>();
      } else {
        return Problem(source, kv.first, key, "unknown setting");
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) +
                                      ": monitor: " + e.msg);
  }
  if (config.enabled && config.apps.empty()) {
    return Problem(source, node, "apps", "name at least one application (tag or tag_regex)");
  }
  return config;
}

std::optional<std::pair<std::string, std::string>> MapApplication(const MonitorConfig& config,
                                                                  const std::string& tag) {
  for (const auto& app : config.apps) {
    if ((!app.tag.empty() && app.tag == tag) ||
        (!app.tag_regex.empty() && std::regex_match(tag, app.regex))) {
      return std::make_pair(app.model, app.workload);
    }
  }
  return std::nullopt;
}

std::string NeuronMonitorConfigJson(const MonitorConfig& config) {
  const std::string period = std::to_string(std::lround(config.period_seconds)) + "s";
  nlohmann::json metrics = nlohmann::json::array();
  for (const char* group : {"execution_stats", "neuroncore_counters", "memory_used"}) {
    metrics.push_back({{"type", group}});
  }
  nlohmann::json json = {
      {"period", period},
      {"neuron_runtimes", {{{"tag_filter", ".*"}, {"metrics", metrics}}}},
      {"system_metrics", nlohmann::json::array()},
  };
  return json.dump(2) + "\n";
}

}  // namespace devtime::agent::monitor
