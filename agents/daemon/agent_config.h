// The agent daemon's configuration (devtime-agent run --config agent.yaml); the format is
// documented in deploy/agent.example.yaml. Unknown keys and bad values are errors naming the
// file, line and key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "agents/monitor/monitor_config.h"

namespace devtime::agent {

struct AgentConfig {
  std::string name;           // default: the host name
  std::string host;           // default: this machine's host name
  std::string instance_type;  // default: $DEVTIME_INSTANCE_TYPE, else the DMI product name
  std::map<std::string, std::string> labels;
  std::string collector = "127.0.0.1:50051";
  std::filesystem::path work_dir = "/var/lib/devtime-agent/runs";    // one folder per run
  std::filesystem::path spool_dir = "/var/lib/devtime-agent/spool";  // runs awaiting upload
  std::filesystem::path state_dir = "/var/lib/devtime-agent/state";  // last known assignments
  uint64_t spool_max_bytes = 1ull << 30;
  std::string metrics_listen;  // host:port for /metrics; "" = no metrics endpoint
  std::string harness_python = "/usr/bin/python3";  // {python} in job commands
  // {harness} in job commands: the harness script, so that central jobs need not know where
  // each agent keeps it (a packaged install: the repository under /opt/devtime).
  std::filesystem::path harness = "/opt/devtime/agents/harness/devtime_harness.py";
  std::string token_file;  // this agent's token (devtimectl agents add NAME --host HOST)
  std::string tls_ca;      // PEM CA of the collector's certificate: connect with TLS
  std::string tls_cert;    // PEM client certificate (mutual TLS)
  std::string tls_key;
  // Where each run's trace files are kept (agents/daemon/trace_store.h): a local directory or a
  // file:// URI ("" = not kept; the runs' artifacts then name the files in work_dir). A
  // remote store is mounted (NFS, s3fs, ...) and given as its mount point.
  std::filesystem::path trace_store;
  uint64_t trace_retention_days = 30;  // run folders in trace_store older than this are removed
  // neuron-monitor's stream, folded into window runs (issue 24; agents/monitor/README.md).
  monitor::MonitorConfig monitor;
};

// Parses `yaml` (from `source`, for messages) and fills defaults: work_dir, spool_dir and
// state_dir under DefaultDataDir(), the collector from $DEVTIME_COLLECTOR when the file names
// none (as devtimectl does), else 127.0.0.1:50051.
absl::StatusOr<AgentConfig> ParseAgentConfig(const std::string& yaml, const std::string& source);
// Reads `path`; relative paths in it (dirs, token_file, tls_*, harness) are relative to its
// folder, so deploy/agent.example.yaml works from a clone whatever the working directory.
absl::StatusOr<AgentConfig> ReadAgentConfig(const std::string& path);

// Where the agent keeps runs, spool and state unless agent.yaml says: systemd's
// $STATE_DIRECTORY (StateDirectory= in deploy/systemd/devtime-agent.service), else
// /var/lib/devtime-agent as root, else $XDG_STATE_HOME/devtime-agent (default
// ~/.local/state/devtime-agent): a normal user needs no folder under /var/lib.
std::filesystem::path DefaultDataDir();

// The instance type from $DEVTIME_INSTANCE_TYPE or /sys/devices/virtual/dmi/id/product_name.
std::string DetectInstanceType();

}  // namespace devtime::agent
