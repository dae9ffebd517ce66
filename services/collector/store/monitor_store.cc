#include "services/collector/store/monitor_store.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string_view>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "services/collector/analyze/attribution.h"
#include "services/collector/analyze/monitor_judge.h"
#include "services/collector/store/regression_store.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

constexpr int64_t kJudgedHistorySeconds = 14 * 24 * 3600;
constexpr int64_t kSameRegressionSeconds = 3 * 3600;  // a re-placed change is the same one
constexpr int kHostWindows = 6;             // windows each side that say whether a host moved
constexpr double kMinErrorRateRise = 0.01;  // one execution in a hundred

// A merged latency histogram of one hour: the hosts' sketches of one accuracy added.
struct MergedSketch {
  double accuracy = 0;
  std::map<int, double> buckets;
  double zero = 0, total = 0, min = 0, max = 0;

  void Add(const v1::LatencySketch& s) {
    if (s.relative_accuracy() <= 0) return;
    if (accuracy == 0) accuracy = s.relative_accuracy();
    if (s.relative_accuracy() != accuracy) return;  // agents of one fleet share the default
    double weight = s.zero_weight();
    for (int k = 0; k < s.weights_size(); ++k) {
      buckets[s.min_index() + k] += s.weights(k);
      weight += s.weights(k);
    }
    if (weight <= 0) return;
    min = total > 0 ? std::min(min, s.min_us()) : s.min_us();
    max = total > 0 ? std::max(max, s.max_us()) : s.max_us();
    zero += s.zero_weight();
    total += weight;
  }

  // As agents/monitor/latency_sketch.cc reads it: the bucket's value 2 gamma^i / (gamma + 1).
  double Quantile(double q) const {
    if (total <= 0) return std::nan("");
    const double rank = q * total;
    double seen = zero;
    if (zero > 0 && seen >= rank) return min;
    const double log_gamma = std::log((1 + accuracy) / (1 - accuracy));
    for (const auto& [index, w] : buckets) {
      seen += w;
      if (seen >= rank && w > 0) {
        const double v = 2 * std::exp(index * log_gamma) / (std::exp(log_gamma) + 1);
        return std::clamp(v, min, max);
      }
    }
    return max;
  }
};

std::string EnvironmentJson(const v1::RunSummary& run) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [key, value] : run.environment()) env[key] = value;
  return env.dump();
}

std::string Iso(int64_t s) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(s), absl::UTCTimeZone());
}

// One host's level of `metric` over its windows where `condition` holds (SQL over
// monitor_windows): the mean of its windows' percentile, or its error rate.
std::string HostLevel(const std::string& metric, const std::string& condition) {
  if (metric == "error_rate") {
    return "(sum(errors) FILTER (WHERE " + condition +
           "))::float8 / nullif(sum(executions + errors) FILTER (WHERE " + condition + "), 0)";
  }
  const std::string column = metric == "device_p50"  ? "device_p50_us"
                             : metric == "total_p99" ? "total_p99_us"
                                                     : "device_p99_us";
  return "avg(" + column + ") FILTER (WHERE " + condition + ")";
}

// Whether a host whose own level went from `before` to `after` moved with the change `f`: by at
// least half of it (relatively for latencies; in rate points for error_rate, which starts near
// 0).
template <typename Found>
bool HostMoved(const Found& f, double before, double after) {
  if (f.metric == "error_rate") return after - before >= (f.after - f.before) / 2 && after > before;
  return before > 0 && after / before - 1 >= f.change / 2;
}

}  // namespace

absl::StatusOr<bool> MonitorStore::Ingest(const v1::RunSummary& run) {
  const auto& id = run.identity();
  const auto& m = run.monitor();
  const int64_t start = m.window_start().seconds();
  if (auto s = months_.Ensure(absl::FromUnixSeconds(start)); !s.ok()) return s;
  uint64_t errors = 0;
  for (const auto& [kind, count] : m.errors()) errors += count;
  std::vector<std::string> neffs(m.neff_names().begin(), m.neff_names().end());
  const std::string bytes = DeterministicBytes(m);
  auto stored = db_.Transact("store monitor window", [&](pqxx::work& tx) -> absl::StatusOr<bool> {
    auto rows = tx.exec_params(
        "INSERT INTO monitor_windows (run_id, at, window_end, model, workload, instance_type,"
        " host, runtime_tag, neff_names, executions, errors, device_p50_us, device_p99_us,"
        " total_p99_us, utilization_pct, environment, monitor)"
        " VALUES ($1, to_timestamp($2), to_timestamp($3), $4, $5, $6, $7, $8, $9::text[], $10, "
        "$11, $12,"
        " $13, $14, $15, $16, $17) ON CONFLICT DO NOTHING RETURNING 1",
        id.run_id(), static_cast<double>(start), static_cast<double>(m.window_end().seconds()),
        id.model(), id.workload(), id.instance_type(), id.host(), m.runtime_tag(),
        BinaryTextArray(neffs), static_cast<long long>(m.executions()),
        static_cast<long long>(errors), m.device_p50_us(), m.device_p99_us(), m.total_p99_us(),
        m.neuroncore_utilization_pct(), EnvironmentJson(run), pqxx::binarystring(bytes));
    return !rows.empty();
  });
  if (!stored.ok() || !*stored) return stored;
  // The first window of a newer hour: the hour before it is judged (see the header).
  const MonitorSeriesKey key{id.model(), id.workload(), id.instance_type()};
  bool judge = false;
  {
    std::lock_guard lock(mu_);
    int64_t& judged = judged_to_[key];
    if (start > judged) {
      judged = start;
      judge = true;
    }
  }
  if (judge) {
    auto opened = Judge(key, start);
    if (!opened.ok()) {
      std::cerr << "devtime-collector: judging monitor series " << key.model << "/" << key.workload
                << ": " << opened.status().message() << std::endl;
    }
  }
  return true;
}

absl::StatusOr<std::vector<MonitorHour>> MonitorStore::Hours(const MonitorSeriesKey& key,
                                                             int64_t since_s) {
  std::vector<MonitorHour> hours;
  auto status = db_.Run("load monitor series", [&](pqxx::connection_base& c) {
    hours.clear();
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params(
        "SELECT extract(epoch FROM at)::bigint, extract(epoch FROM window_end)::bigint,"
        " executions, errors, monitor FROM monitor_windows WHERE model = $1 AND workload = $2"
        " AND instance_type = $3 AND at >= to_timestamp($4) ORDER BY at",
        key.model, key.workload, key.instance_type, static_cast<double>(since_s));
    MergedSketch device, total;
    uint64_t errors = 0;
    auto close = [&] {
      if (hours.empty()) return;
      MonitorHour& h = hours.back();
      h.values["device_p50"] = device.Quantile(0.5);
      h.values["device_p99"] = device.Quantile(0.99);
      h.values["total_p99"] = total.Quantile(0.99);
      h.values["error_rate"] =
          h.executions + errors > 0
              ? static_cast<double>(errors) / static_cast<double>(h.executions + errors)
              : 0;
    };
    for (const auto& row : rows) {
      const int64_t at = row[0].as<int64_t>();
      if (hours.empty() || hours.back().window_start_s != at) {
        close();
        hours.push_back({.window_start_s = at, .window_end_s = row[1].as<int64_t>()});
        device = {};
        total = {};
        errors = 0;
      }
      MonitorHour& h = hours.back();
      h.executions += row[2].as<uint64_t>();
      errors += row[3].as<uint64_t>();
      ++h.hosts;
      v1::MonitorWindow window;
      pqxx::binarystring bytes(row[4]);
      if (window.ParseFromString(bytes.str())) {
        device.Add(window.device_latency());
        total.Add(window.total_latency());
      }
    }
    close();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return hours;
}

absl::StatusOr<int> MonitorStore::Judge(const MonitorSeriesKey& key, int64_t before_s) {
  auto loaded = Hours(key, before_s - kJudgedHistorySeconds);
  if (!loaded.ok()) return loaded.status();
  std::vector<MonitorHour> hours;
  for (auto& h : *loaded) {
    if (h.window_start_s < before_s) hours.push_back(std::move(h));
  }
  const auto options = analyze::WindowDetectorOptions();
  if (hours.size() < 2 * options.min_segment + 2) return 0;
  // Changes by first bad window, every metric that moved there (device_p99 first).
  struct Found {
    std::size_t index, previous;
    std::string metric;
    double before, after, change, p_value;
    nlohmann::json metrics = nlohmann::json::array();
  };
  std::vector<Found> found;
  for (const char* metric : {"device_p99", "device_p50", "total_p99", "error_rate"}) {
    std::vector<analyze::MonitorPoint> points;
    bool complete = true;
    for (const auto& h : hours) {
      const double v = h.values.at(metric);
      if (std::isnan(v)) complete = false;
      points.push_back({.window_start_s = h.window_start_s, .value = v});
    }
    if (!complete) continue;  // an hour without latencies: no latency point to judge
    auto changes = analyze::JudgeMonitorSeries(points, options);
    if (!changes.ok()) return changes.status();
    for (const auto& c : *changes) {
      // A ratio near 0 moves by large factors on a handful of errors: error_rate needs an
      // absolute rise too.
      if (std::string_view(metric) == "error_rate" && c.after - c.before < kMinErrorRateRise) {
        continue;
      }
      nlohmann::json entry = {{"metric", metric},
                              {"before", c.before},
                              {"after", c.after},
                              {"relative_change", c.relative_change},
                              {"p_value", c.p_value}};
      auto same = std::find_if(found.begin(), found.end(), [&](const Found& f) {
        return std::abs(static_cast<long>(f.index) - static_cast<long>(c.index)) <= 2;
      });
      if (same != found.end()) {
        same->metrics.push_back(entry);
        continue;
      }
      found.push_back(
          {c.index, c.previous_index, metric, c.before, c.after, c.relative_change, c.p_value});
      found.back().metrics.push_back(entry);
    }
  }
  int opened = 0;
  for (const Found& f : found) {
    const MonitorHour& bad = hours[f.index];
    const int64_t lo = hours[f.index >= kHostWindows ? f.index - kHostWindows : 0].window_start_s;
    const int64_t hi = hours[std::min(hours.size() - 1, f.index + kHostWindows)].window_end_s;
    auto inserted =
        db_.Transact("open latency regression", [&](pqxx::work& tx) -> absl::StatusOr<bool> {
          auto near = tx.exec_params(
              "SELECT regression_id FROM regressions WHERE kind = 'latency' AND model = $1 AND"
              " workload = $2 AND instance_type = $3 AND first_bad_at BETWEEN to_timestamp($4)"
              " AND to_timestamp($5) ORDER BY first_bad_at LIMIT 1",
              key.model, key.workload, key.instance_type,
              static_cast<double>(bad.window_start_s - kSameRegressionSeconds),
              static_cast<double>(bad.window_start_s + kSameRegressionSeconds));
          if (!near.empty()) {
            // The same change, placed again with more windows after it: the newer placement,
            // which rests on more data, is kept (unless another one sits at that window).
            tx.exec_params(
                "UPDATE regressions SET first_bad_at = to_timestamp($2), latency = latency ||"
                " jsonb_build_object('window_start', $3::text, 'window_end', $4::text,"
                " 'last_good_window', $5::text), before_us = $6, after_us = $7,"
                " relative_change = $8, updated_at = now() WHERE regression_id = $1"
                " AND first_bad_at <> to_timestamp($2) AND metric = $9 AND NOT EXISTS (SELECT 1"
                " FROM regressions o WHERE o.kind = 'latency' AND o.model = regressions.model AND"
                " o.workload = regressions.workload AND o.instance_type ="
                " regressions.instance_type AND o.first_bad_at = to_timestamp($2))",
                near[0][0].as<int64_t>(), static_cast<double>(bad.window_start_s),
                Iso(bad.window_start_s), Iso(bad.window_end_s),
                Iso(hours[f.previous].window_start_s), f.before, f.after, f.change, f.metric);
            return false;
          }
          v1::Regression r;
          r.set_kind("latency");
          r.set_severity(analyze::SeverityFor(f.change));
          r.set_model(key.model);
          r.set_workload(key.workload);
          r.set_instance_type(key.instance_type);
          r.set_metric(f.metric);
          r.mutable_first_bad_at()->set_seconds(bad.window_start_s);
          r.set_before(f.before);
          r.set_after(f.after);
          r.set_relative_change(f.change);
          r.set_confidence(std::clamp(1 - f.p_value, 0.0, 1.0));
          for (const auto& m : f.metrics) {
            auto* series = r.add_series();
            series->set_metric(m.at("metric").get<std::string>());
            series->set_before(m.at("before").get<double>());
            series->set_after(m.at("after").get<double>());
            series->set_relative_change(m.at("relative_change").get<double>());
            series->set_baseline_runs(static_cast<uint32_t>(f.index));
          }
          v1::LatencyWindow& window = *r.mutable_latency();
          window.mutable_window_start()->set_seconds(bad.window_start_s);
          window.mutable_window_end()->set_seconds(bad.window_end_s);
          window.mutable_last_good_window()->set_seconds(hours[f.previous].window_start_s);
          // The hosts that moved, on the regression's own metric: their own level before and
          // after, moved by at least half the series' change.
          const std::string level_before = HostLevel(f.metric, "at < to_timestamp($4)");
          const std::string level_after = HostLevel(f.metric, "at >= to_timestamp($4)");
          for (const auto& row : tx.exec_params(
                   "SELECT host, " + level_before + ", " + level_after +
                       " FROM monitor_windows WHERE model = $1 AND workload = $2 AND"
                       " instance_type = $3 AND at >= to_timestamp($5) AND at < to_timestamp($6)"
                       " GROUP BY host ORDER BY host",
                   key.model, key.workload, key.instance_type,
                   static_cast<double>(bad.window_start_s), static_cast<double>(lo),
                   static_cast<double>(hi))) {
            if (row[1].is_null() || row[2].is_null()) continue;
            const double before = row[1].as<double>(), after = row[2].as<double>();
            if (HostMoved(f, before, after)) {
              auto* host = window.add_hosts();
              host->set_host(row[0].as<std::string>());
              host->set_before(before);
              host->set_after(after);
            }
          }
          // The environment values (runtime, driver, AMI, ...) that differ before and after.
          for (const auto& row : tx.exec_params(
                   "SELECT e.key, coalesce(string_agg(DISTINCT e.value, ',') FILTER (WHERE w.at <"
                   " to_timestamp($4)), ''), coalesce(string_agg(DISTINCT e.value, ',') FILTER"
                   " (WHERE w.at >= to_timestamp($4)), '') FROM monitor_windows w,"
                   " jsonb_each_text(w.environment) e WHERE w.model = $1 AND w.workload = $2 AND"
                   " w.instance_type = $3 AND w.at >= to_timestamp($5) AND w.at < to_timestamp($6)"
                   " GROUP BY e.key ORDER BY e.key",
                   key.model, key.workload, key.instance_type,
                   static_cast<double>(bad.window_start_s), static_cast<double>(lo),
                   static_cast<double>(hi))) {
            if (row[1].as<std::string>() != row[2].as<std::string>()) {
              auto* change = r.mutable_attribution()->add_environment();
              change->set_key(row[0].as<std::string>());
              change->set_before(row[1].as<std::string>());
              change->set_after(row[2].as<std::string>());
            }
          }
          auto nightly = tx.exec_params(
              "SELECT run_id::text FROM runs WHERE model = $1 AND status = 'ok'"
              " ORDER BY abs(extract(epoch FROM started_at) - $2) LIMIT 1",
              key.model, static_cast<double>(bad.window_start_s));
          if (!nightly.empty()) window.set_nightly_run_id(nightly[0][0].as<std::string>());
          char change[32];
          std::snprintf(change, sizeof change, "%+.1f%%", 100 * f.change);
          r.set_summary(key.model + "/" + key.workload + " on " +
                        (key.instance_type.empty() ? "?" : key.instance_type) + ": " + f.metric +
                        " " + change + " from the window " + Iso(bad.window_start_s) +
                        " (between the nights, " + std::to_string(window.hosts_size()) +
                        " hosts moved)");
          return regression_sql::InsertLatency(tx, r, "latency change found between the nights")
              .has_value();
        });
    if (!inserted.ok()) return inserted.status();
    opened += *inserted ? 1 : 0;
  }
  return opened;
}

absl::StatusOr<std::vector<v1::RunInfo>> MonitorStore::List(
    const std::string& model, const std::string& workload, unsigned limit,
    const std::optional<std::pair<long long, std::string>>& after) {
  const std::optional<double> after_s =
      after ? std::optional<double>(static_cast<double>(after->first) / 1e6) : std::nullopt;
  const std::string after_run = after ? after->second : "";
  std::vector<v1::RunInfo> runs;
  auto status = db_.Run("list monitor windows", [&](pqxx::connection_base& c) {
    runs.clear();
    pqxx::read_transaction tx{c};
    for (const auto& row : tx.exec_params(
             "SELECT run_id::text, model, workload, host, instance_type, " + EpochMicros("at") +
                 ", " + EpochMicros("window_end") + ", " + EpochMicros("received_at") +
                 ", runtime_tag, executions, errors, device_p50_us, device_p99_us,"
                 " total_p99_us, utilization_pct FROM monitor_windows WHERE ($1 = '' OR model ="
                 " $1) AND ($2 = '' OR workload = $2) AND ($4::float8 IS NULL OR at <"
                 " to_timestamp($4) OR (at = to_timestamp($4) AND run_id > NULLIF($5, '')::uuid))"
                 " ORDER BY at DESC, run_id LIMIT $3",
             model, workload, limit, after_s, after_run)) {
      v1::RunInfo info;
      auto* id = info.mutable_identity();
      id->set_run_id(row[0].as<std::string>());
      id->set_model(row[1].as<std::string>());
      id->set_workload(row[2].as<std::string>());
      id->set_host(row[3].as<std::string>());
      id->set_instance_type(row[4].as<std::string>());
      id->set_device_kind(v1::DEVICE_KIND_NEURON);
      *info.mutable_started_at() = FromMicros(row[5].as<long long>());
      *info.mutable_received_at() = FromMicros(row[7].as<long long>());
      info.set_status(v1::RUN_STATUS_OK);
      info.set_source(v1::RUN_SOURCE_MONITOR);
      auto* m = info.mutable_monitor();
      *m->mutable_window_start() = FromMicros(row[5].as<long long>());
      *m->mutable_window_end() = FromMicros(row[6].as<long long>());
      m->set_runtime_tag(row[8].as<std::string>());
      m->set_executions(row[9].as<uint64_t>());
      if (row[10].as<uint64_t>() > 0) (*m->mutable_errors())["all"] = row[10].as<uint64_t>();
      m->set_device_p50_us(row[11].as<double>());
      m->set_device_p99_us(row[12].as<double>());
      m->set_total_p99_us(row[13].as<double>());
      m->set_neuroncore_utilization_pct(row[14].as<double>());
      runs.push_back(std::move(info));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return runs;
}

}  // namespace devtime::store
