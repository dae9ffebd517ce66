// AgentDaemon's neuron-monitor side (issue 24): the runner (agents/monitor/) folds the stream
// into window runs that enter the same spool as the jobs' runs, and so the same exactly-once
// upload; its live figures go to the agent's /metrics:
//
//   devtime_agent_monitor_lines_total{outcome}        used | not_json | unusable_app | unmapped_app
//   devtime_agent_monitor_device_latency_seconds{model,quantile}   last period, 0.5 | 0.99
//   devtime_agent_monitor_total_latency_seconds{model,quantile}    last period, 0.5 | 0.99
//   devtime_agent_monitor_executions_total{model}     completed executions
//   devtime_agent_monitor_errors_total{model,kind}    error_summary, the six kinds of the format
//   devtime_agent_monitor_neuroncore_utilization_ratio{model}      last period, 0..1
//   devtime_agent_monitor_windows_total{model}        windows spooled
//   devtime_agent_monitor_restarts_total              neuron-monitor exits (restarted)
//
// Cardinality is bounded: `model` takes only the models named in agent.yaml's monitor.apps
// (unmapped applications are counted under lines_total, never labelled), `quantile`, `kind`
// and `outcome` come from fixed sets. M mapped models: at most 4 + 13 M series.
#include <fstream>

#include "agents/daemon/daemon.h"
#include "agents/daemon/daemon_internal.h"
#include "agents/daemon/files.h"
#include "proto/wire/validation.h"

namespace devtime::agent {
namespace {

using prometheus::Counter;
using prometheus::Gauge;

template <typename Metric>
prometheus::Family<Metric>& Family(prometheus::Registry& registry, const char* name,
                                   const char* help) {
  return prometheus::detail::Builder<Metric>().Name(name).Help(help).Register(registry);
}

const char* const kErrorKinds[] = {"generic", "numerical", "transient",
                                   "model",   "runtime",   "hardware"};

class MetricsObserver : public monitor::MonitorObserver {
 public:
  explicit MetricsObserver(prometheus::Registry& r)
      : lines_(Family<Counter>(r, "devtime_agent_monitor_lines_total",
                               "neuron-monitor lines and application entries, by outcome")),
        device_(Family<Gauge>(r, "devtime_agent_monitor_device_latency_seconds",
                              "Device latency of the last period, by model and quantile")),
        total_(Family<Gauge>(r, "devtime_agent_monitor_total_latency_seconds",
                             "Total latency of the last period, by model and quantile")),
        executions_(Family<Counter>(r, "devtime_agent_monitor_executions_total",
                                    "Completed executions, by model")),
        errors_(Family<Counter>(r, "devtime_agent_monitor_errors_total",
                                "Execution errors, by model and kind")),
        utilization_(Family<Gauge>(r, "devtime_agent_monitor_neuroncore_utilization_ratio",
                                   "Mean NeuronCore utilisation of the last period, by model")),
        windows_(Family<Counter>(r, "devtime_agent_monitor_windows_total",
                                 "Monitor windows spooled for upload, by model")),
        restarts_(Family<Counter>(r, "devtime_agent_monitor_restarts_total",
                                  "Times neuron-monitor exited and was restarted")
                      .Add({})) {
    for (const char* outcome : {"used", "not_json", "unusable_app", "unmapped_app"}) {
      lines_.Add({{"outcome", outcome}});
    }
  }

  void Line(const std::string& outcome, int count) override {
    lines_.Add({{"outcome", outcome}}).Increment(count);
  }
  void Period(const std::string& model, const monitor::AppReport& app) override {
    if (app.utilization_pct) utilization_.Add({{"model", model}}).Set(*app.utilization_pct / 100);
    if (!app.execution) return;
    const auto& e = *app.execution;
    if (auto it = e.outcomes.find("completed"); it != e.outcomes.end()) {
      executions_.Add({{"model", model}}).Increment(static_cast<double>(it->second));
    }
    for (const char* kind : kErrorKinds) {
      auto it = e.errors.find(kind);
      auto& counter = errors_.Add({{"model", model}, {"kind", kind}});
      if (it != e.errors.end()) counter.Increment(static_cast<double>(it->second));
    }
    // p50 and p99 are entries 3 and 5 of the format's percentiles.
    for (auto [family, latency] :
         {std::pair{&device_, &e.device_latency}, std::pair{&total_, &e.total_latency}}) {
      if (!*latency) continue;
      family->Add({{"model", model}, {"quantile", "0.5"}}).Set((*latency)->seconds[3]);
      family->Add({{"model", model}, {"quantile", "0.99"}}).Set((*latency)->seconds[5]);
    }
  }
  void ChildRestart() override { restarts_.Increment(); }
  void WindowClosed(const std::string& model) override {
    windows_.Add({{"model", model}}).Increment();
  }

 private:
  prometheus::Family<Counter>& lines_;
  prometheus::Family<Gauge>& device_;
  prometheus::Family<Gauge>& total_;
  prometheus::Family<Counter>& executions_;
  prometheus::Family<Counter>& errors_;
  prometheus::Family<Gauge>& utilization_;
  prometheus::Family<Counter>& windows_;
  Counter& restarts_;
};

// The driver's version, as the kernel module reports it ("" when not loaded).
std::string DriverVersion() {
  std::ifstream in("/sys/module/neuron/version");
  std::string version;
  std::getline(in, version);
  return version;
}

}  // namespace

absl::Status AgentDaemon::StartMonitor() {
  monitor::RunContext context;
  context.host = config_.host;
  context.instance_type = config_.instance_type;
  if (std::string driver = DriverVersion(); !driver.empty()) context.environment["driver"] = driver;
  for (const auto& [k, v] : config_.monitor.environment) context.environment[k] = v;
  monitor::RunnerHooks hooks;
  hooks.deliver = [this](const v1::RunSummary& run) { return SpoolMonitorWindow(run); };
  hooks.log = [](const std::string& line) { DaemonLog(line); };
  hooks.write_file = [this](const std::filesystem::path& path, const std::string& bytes) {
    return ReplaceFileDurably(path, bytes, env_);
  };
  if (metrics_) {
    monitor_observer_ = std::make_unique<MetricsObserver>(metrics_->registry());
    hooks.observer = monitor_observer_.get();
  }
  monitor_ = std::make_unique<monitor::MonitorRunner>(config_.monitor, std::move(context),
                                                      config_.state_dir, std::move(hooks));
  return monitor_->Start();
}

absl::Status AgentDaemon::SpoolMonitorWindow(const v1::RunSummary& run) {
  if (auto valid = wire::ValidateRun(run); !valid.ok()) {
    // Never retried: the window is dropped, saying why (a bug, or values past the contract).
    DaemonLog("monitor window not valid, dropped: " + std::string(valid.message()));
    return absl::OkStatus();
  }
  // A spooled run id is stored once: a window re-delivered after a restart is not doubled.
  if (auto put = spool_->Put(run); !put.ok()) return put;
  std::lock_guard lock(mu_);
  spooled_ = true;  // wake the uploader
  changed_.notify_all();
  return absl::OkStatus();
}

}  // namespace devtime::agent
