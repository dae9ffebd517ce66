// The `monitor:` section of agent.yaml: how the agent runs neuron-monitor and names what it
// sees. Documented in README.md ("Between the nights") and agents/monitor/README.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace devtime::agent::monitor {

// Which applications are which model: `tag` matches neuron_runtime_tag exactly, `tag_regex`
// matches it whole; the first entry that matches wins.
struct AppMapping {
  std::string tag;
  std::string tag_regex;
  std::regex regex;
  std::string model;
  std::string workload;
};

struct MonitorConfig {
  bool enabled = false;
  // Run through /bin/sh -c; "{config}" is replaced by the config file, else " -c FILE" is
  // appended. The agent writes that file (state_dir/monitor/neuron-monitor.json) unless
  // config_file names one.
  std::string command = "neuron-monitor";
  std::string config_file;
  double period_seconds = 10;    // neuron-monitor's report period (written into its config)
  double window_seconds = 3600;  // one summary per application and window
  std::vector<AppMapping> apps;  // applications matching none are skipped (and counted)
  std::map<std::string, std::string> environment;  // versions to record, e.g. neuron-runtime
  // Replays of a recorded stream (tests, backfills): the stream's time starts here (Unix
  // seconds) instead of now. 0 = now.
  int64_t replay_start = 0;
  double max_backoff_seconds = 60;  // restarts of a child that exits: 1 s doubling to this
};

// Parses the section (a mapping); errors name source:line and the key.
absl::StatusOr<MonitorConfig> ParseMonitorConfig(const YAML::Node& node, const std::string& source);

// The (model, workload) for `tag`, or nullopt when no mapping names it.
std::optional<std::pair<std::string, std::string>> MapApplication(const MonitorConfig& config,
                                                                  const std::string& tag);

// The neuron-monitor config the agent needs (B2): the period, every application, the groups
// it reads (execution_stats, neuroncore_counters, memory_used), no system groups.
std::string NeuronMonitorConfigJson(const MonitorConfig& config);

}  // namespace devtime::agent::monitor
