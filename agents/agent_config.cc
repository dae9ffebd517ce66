#include "agents/agent_config.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "agents/run_summary_builder.h"
#include "yaml-cpp/yaml.h"

namespace devtime::agent {
namespace {

absl::Status Problem(const std::string& source, const YAML::Node& node, const std::string& key,
                     const std::string& what) {
  return absl::InvalidArgumentError(source + ":" + std::to_string(node.Mark().line + 1) + ": " +
                                    key + ": " + what);
}

}  // namespace

std::string DetectInstanceType() {
  if (const char* env = std::getenv("DEVTIME_INSTANCE_TYPE"); env && *env) return env;
  std::ifstream dmi("/sys/devices/virtual/dmi/id/product_name");
  std::string product;
  std::getline(dmi, product);
  return product;
}

absl::StatusOr<AgentConfig> ParseAgentConfig(const std::string& yaml, const std::string& source) {
  static const std::set<std::string> kKnown = {
      "name",           "host",       "instance_type", "labels",          "collector",
      "work_dir",       "spool_dir",  "state_dir",     "spool_max_bytes", "metrics_listen",
      "harness_python", "token_file", "tls_ca",        "tls_cert",        "tls_key"};
  AgentConfig config;
  try {
    YAML::Node root = YAML::Load(yaml);
    if (root && !root.IsNull() && !root.IsMap()) {
      return absl::InvalidArgumentError(source + ": must be a mapping of settings");
    }
    for (const auto& entry : root) {
      auto key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      if (!kKnown.count(key)) return Problem(source, entry.first, key, "unknown setting");
      if (key == "labels") {
        if (!value.IsMap()) return Problem(source, value, key, "must be a mapping");
        for (const auto& label : value) {
          config.labels[label.first.as<std::string>()] = label.second.as<std::string>();
        }
        continue;
      }
      if (!value.IsScalar()) return Problem(source, value, key, "must be a single value");
      if (key == "spool_max_bytes") {
        config.spool_max_bytes = value.as<uint64_t>();
        continue;
      }
      std::string text = value.as<std::string>();
      if (key == "name") config.name = text;
      if (key == "host") config.host = text;
      if (key == "instance_type") config.instance_type = text;
      if (key == "collector") config.collector = text;
      if (key == "work_dir") config.work_dir = text;
      if (key == "spool_dir") config.spool_dir = text;
      if (key == "state_dir") config.state_dir = text;
      if (key == "metrics_listen") config.metrics_listen = text;
      if (key == "harness_python") config.harness_python = text;
      if (key == "token_file") config.token_file = text;
      if (key == "tls_ca") config.tls_ca = text;
      if (key == "tls_cert") config.tls_cert = text;
      if (key == "tls_key") config.tls_key = text;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) + ": " +
                                      e.msg);
  }
  if (config.host.empty()) config.host = HostName();
  if (config.name.empty()) config.name = config.host;
  if (config.instance_type.empty()) config.instance_type = DetectInstanceType();
  return config;
}

absl::StatusOr<AgentConfig> ReadAgentConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return ParseAgentConfig(content.str(), path);
}

}  // namespace devtime::agent
