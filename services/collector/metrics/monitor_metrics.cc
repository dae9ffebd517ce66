#include "services/collector/metrics/monitor_metrics.h"

namespace devtime::collector {
namespace {

const std::pair<const char*, const char*> kFamilies[] = {
    {"devtime_monitor_latency_seconds",
     "neuron-monitor latency of the newest hour (mean over hosts), by metric"},
    {"devtime_monitor_executions", "Executions in the newest hour"},
    {"devtime_monitor_error_ratio", "Errors / (executions + errors) in the newest hour"},
    {"devtime_monitor_utilization_ratio", "Mean NeuronCore utilisation in the newest hour"},
    {"devtime_monitor_hosts", "Hosts that reported the newest hour"},
    {"devtime_monitor_regressions", "Latency regressions open (between the nights)"},
    {"devtime_monitor_last_regression_timestamp_seconds",
     "First bad window of the newest latency regression"},
};

}  // namespace

MonitorMetrics::MonitorMetrics(store::Database& store, prometheus::Registry& registry)
    : store_(store) {
  for (const auto& [name, help] : kFamilies) {
    families_[name].family = &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  }
}

void MonitorMetrics::Apply(const std::string& name, const std::map<Labels, double>& values) {
  Family& f = families_.at(name);
  for (const auto& labels : f.exported) {
    if (!values.count(labels)) f.family->Remove(&f.family->Add(labels));
  }
  f.exported.clear();
  for (const auto& [labels, value] : values) {
    f.family->Add(labels).Set(value);
    f.exported.insert(labels);
  }
}

absl::Status MonitorMetrics::Refresh(absl::Time now, absl::Duration stale_after) {
  std::map<std::string, std::map<Labels, double>> values;
  const double since = static_cast<double>(absl::ToUnixSeconds(now - stale_after));
  auto status = store_.Run("refresh monitor metrics", [&](pqxx::connection_base& c) {
    values.clear();
    pqxx::read_transaction tx{c};
    for (const auto& row : tx.exec_params(
             "WITH newest AS (SELECT model, workload, instance_type, max(at) AS at FROM"
             " monitor_windows WHERE at >= to_timestamp($1) GROUP BY 1, 2, 3)"
             " SELECT w.model, w.workload, w.instance_type, avg(device_p50_us), avg(device_p99_us),"
             " avg(total_p99_us), sum(executions), sum(errors), avg(utilization_pct),"
             " count(DISTINCT host) FROM monitor_windows w JOIN newest n USING (model, workload,"
             " instance_type, at) GROUP BY 1, 2, 3",
             since)) {
      Labels labels{{"model", row[0].as<std::string>()},
                    {"workload", row[1].as<std::string>()},
                    {"instance_type", row[2].as<std::string>()}};
      int column = 3;
      for (const char* metric : {"device_p50", "device_p99", "total_p99"}) {
        Labels with = labels;
        with["metric"] = metric;
        values["devtime_monitor_latency_seconds"][with] = row[column++].as<double>() / 1e6;
      }
      const double executions = row[6].as<double>(), errors = row[7].as<double>();
      values["devtime_monitor_executions"][labels] = executions;
      values["devtime_monitor_error_ratio"][labels] =
          executions + errors > 0 ? errors / (executions + errors) : 0;
      values["devtime_monitor_utilization_ratio"][labels] = row[8].as<double>() / 100;
      values["devtime_monitor_hosts"][labels] = row[9].as<double>();
      values["devtime_monitor_regressions"][labels] = 0;
    }
    for (const auto& row :
         tx.exec("SELECT model, workload, instance_type, count(*) FILTER (WHERE state IN ('open',"
                 " 'acknowledged')), extract(epoch FROM max(first_bad_at)) FROM regressions"
                 " WHERE kind = 'latency' GROUP BY 1, 2, 3")) {
      Labels labels{{"model", row[0].as<std::string>()},
                    {"workload", row[1].as<std::string>()},
                    {"instance_type", row[2].as<std::string>()}};
      values["devtime_monitor_regressions"][labels] = row[3].as<double>();
      values["devtime_monitor_last_regression_timestamp_seconds"][labels] = row[4].as<double>();
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  for (const auto& [name, help] : kFamilies) Apply(name, values[name]);
  return absl::OkStatus();
}

}  // namespace devtime::collector
