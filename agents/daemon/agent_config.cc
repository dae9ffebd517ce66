#include "agents/daemon/agent_config.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <type_traits>
#include <variant>

#include "agents/contract/run_summary_builder.h"
#include "agents/daemon/files.h"
#include "yaml-cpp/yaml.h"

namespace devtime::agent {
namespace {

absl::Status Problem(const std::string& source, const YAML::Node& node, const std::string& key,
                     const std::string& what) {
  return absl::InvalidArgumentError(source + ":" + std::to_string(node.Mark().line + 1) + ": " +
                                    key + ": " + what);
}

// Every setting but `labels` (a mapping), and the field its single value fills.
using Field = std::variant<std::string AgentConfig::*, std::filesystem::path AgentConfig::*,
                           uint64_t AgentConfig::*>;
const std::map<std::string, Field> kSingleValueSettings = {
    {"name", &AgentConfig::name},
    {"host", &AgentConfig::host},
    {"instance_type", &AgentConfig::instance_type},
    {"collector", &AgentConfig::collector},
    {"work_dir", &AgentConfig::work_dir},
    {"spool_dir", &AgentConfig::spool_dir},
    {"state_dir", &AgentConfig::state_dir},
    {"spool_max_bytes", &AgentConfig::spool_max_bytes},
    {"metrics_listen", &AgentConfig::metrics_listen},
    {"harness_python", &AgentConfig::harness_python},
    {"harness", &AgentConfig::harness},
    {"token_file", &AgentConfig::token_file},
    {"tls_ca", &AgentConfig::tls_ca},
    {"tls_cert", &AgentConfig::tls_cert},
    {"tls_key", &AgentConfig::tls_key},
    {"trace_store", &AgentConfig::trace_store},
    {"trace_retention_days", &AgentConfig::trace_retention_days},
};

const char* NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// trace_store as a directory: a file:// URI becomes its path; any other scheme is refused,
// since the agent copies the files itself and speaks no remote protocol.
absl::Status CheckTraceStore(AgentConfig& config) {
  std::string store = config.trace_store.string();
  if (store.rfind("file://", 0) == 0) {
    store.erase(0, std::string_view("file://").size());
  } else if (store.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(
        "only a local directory or a file:// URI; mount remote storage (NFS, s3fs, ...) and "
        "give the mount point");
  }
  if (!store.empty() && store.front() != '/') {
    return absl::InvalidArgumentError("must be an absolute path (the links name it)");
  }
  config.trace_store = store;
  return absl::OkStatus();
}

}  // namespace

std::filesystem::path DefaultDataDir() {
  if (const char* systemd = NonEmptyEnv("STATE_DIRECTORY")) {
    std::string first(systemd);  // systemd joins several StateDirectory= entries with ':'
    return first.substr(0, first.find(':'));
  }
  if (geteuid() == 0) return "/var/lib/devtime-agent";
  if (const char* xdg = NonEmptyEnv("XDG_STATE_HOME")) {
    return std::filesystem::path(xdg) / "devtime-agent";
  }
  const char* home = NonEmptyEnv("HOME");
  return std::filesystem::path(home != nullptr ? home : ".") / ".local/state/devtime-agent";
}

std::string DetectInstanceType() {
  if (const char* env = std::getenv("DEVTIME_INSTANCE_TYPE"); env && *env) return env;
  std::ifstream dmi("/sys/devices/virtual/dmi/id/product_name");
  std::string product;
  std::getline(dmi, product);
  return product;
}

absl::StatusOr<AgentConfig> ParseAgentConfig(const std::string& yaml, const std::string& source) {
  AgentConfig config;
  const std::filesystem::path data = DefaultDataDir();
  config.work_dir = data / "runs";
  config.spool_dir = data / "spool";
  config.state_dir = data / "state";
  if (const char* collector = NonEmptyEnv("DEVTIME_COLLECTOR")) config.collector = collector;
  try {
    YAML::Node root = YAML::Load(yaml);
    if (root && !root.IsNull() && !root.IsMap()) {
      return absl::InvalidArgumentError(source + ": must be a mapping of settings");
    }
    for (const auto& entry : root) {
      auto key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      if (key == "labels") {
        if (!value.IsMap()) return Problem(source, value, key, "must be a mapping");
        for (const auto& label : value) {
          config.labels[label.first.as<std::string>()] = label.second.as<std::string>();
        }
        continue;
      }
      if (key == "monitor") {
        auto monitor = monitor::ParseMonitorConfig(value, source);
        if (!monitor.ok()) return monitor.status();
        config.monitor = std::move(*monitor);
        continue;
      }
      auto setting = kSingleValueSettings.find(key);
      if (setting == kSingleValueSettings.end()) {
        return Problem(source, entry.first, key, "unknown setting");
      }
      if (!value.IsScalar()) return Problem(source, value, key, "must be a single value");
      std::visit(
          [&](auto field) {
            auto& target = config.*field;
            if constexpr (std::is_same_v<std::decay_t<decltype(target)>, uint64_t>) {
              target = value.as<uint64_t>();
            } else {
              target = value.as<std::string>();
            }
          },
          setting->second);
      absl::Status checked = absl::OkStatus();
      if (key == "trace_store") checked = CheckTraceStore(config);
      if (key == "trace_retention_days" &&
          (config.trace_retention_days == 0 || config.trace_retention_days > 36'500)) {
        checked = absl::InvalidArgumentError("must be 1..36500 (days)");
      }
      if (!checked.ok()) return Problem(source, value, key, std::string(checked.message()));
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
  auto yaml = ReadWholeFile(path);
  if (!yaml) return absl::NotFoundError(path + ": cannot open");
  auto config = ParseAgentConfig(*yaml, path);
  if (!config.ok()) return config;
  // Absolute: the job commands that use {harness} run in their own folders.
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  auto resolve = [&](auto& setting) {
    std::filesystem::path value(setting);
    if (!value.empty() && value.is_relative()) setting = (folder / value).lexically_normal();
  };
  for (auto* dir : {&config->work_dir, &config->spool_dir, &config->state_dir, &config->harness}) {
    resolve(*dir);
  }
  for (auto* file : {&config->token_file, &config->tls_ca, &config->tls_cert, &config->tls_key}) {
    resolve(*file);
  }
  return config;
}

}  // namespace devtime::agent
