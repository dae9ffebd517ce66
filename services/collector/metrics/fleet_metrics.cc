#include "services/collector/metrics/fleet_metrics.h"

#include <set>
#include <vector>

#include "nlohmann/json.hpp"
#include "proto/wire/names.h"
#include "services/collector/store/sql_util.h"

namespace devtime::collector {
namespace {

using Labels = prometheus::Labels;
using Values = std::map<Labels, double>;

constexpr double kMicrosPerSecond = 1e6;

// What one refresh read: every family's full set of series.
struct FleetSnapshot {
  Values step_seconds;
  Values op_seconds;
  Values layer_seconds;
  Values latest_run;
  Values regressions_open;
  Values regressions_suspected;
  Values job_last_success;
  Values job_slots_recent;
  Values agent_last_seen;
  Values agent_connected;
};

// The instants a refresh compares against, as SQL timestamptz text.
struct Cutoffs {
  std::string stale;    // now - stale_after
  std::string day_ago;  // now - 24 h: the job slot window
  std::string now;
};

std::string SqlTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

Labels TripleLabels(const pqxx::row& row) {
  return {{"model", row[0].as<std::string>()},
          {"workload", row[1].as<std::string>()},
          {"instance_type", row[2].as<std::string>()}};
}

Labels With(Labels labels, const std::string& name, const std::string& value) {
  labels[name] = value;
  return labels;
}

double MicrosToSeconds(const pqxx::field& micros) {
  return static_cast<double>(micros.as<long long>()) / kMicrosPerSecond;
}

// The latest OK run of every (model, workload, instance type) started since $1, with the
// number of steps its totals are spread over (as the store's series points do: the steps,
// else the capture's active steps, else 1) and whether its basis is self CPU time.
const std::string kLatestRuns =
    "WITH latest AS (SELECT DISTINCT ON (model, workload, instance_type) run_id, model,"
    " workload, instance_type, started_at, device_us_per_step, layers,"
    " (device_kind = 'cpu' OR total_device_us = 0) AS cpu_basis,"
    " CASE WHEN step_count > 0 THEN step_count"
    "  WHEN coalesce((capture->>'active_steps')::int, 0) > 0 THEN (capture->>'active_steps')::int"
    "  ELSE 1 END AS steps"
    " FROM runs WHERE status = 'ok' AND started_at >= $1::timestamptz"
    " ORDER BY model, workload, instance_type, started_at DESC, run_id DESC) ";

const std::set<std::string>& KnownLayers() {
  static const std::set<std::string> layers = {"framework_dispatch", "runtime_scheduling",
                                               "device_execution", "idle"};
  return layers;
}

// runs.layers is {"device_execution": time_us over the captured steps, ...} (store.cc).
void AddLayers(const Labels& triple, const std::string& layers_json, double steps, Values& out) {
  auto layers = nlohmann::json::parse(layers_json, nullptr, /*allow_exceptions=*/false);
  if (!layers.is_object()) return;
  for (const auto& [layer, time_us] : layers.items()) {
    if (!KnownLayers().count(layer) || !time_us.is_number()) continue;
    out[With(triple, "layer", layer)] = time_us.get<double>() / steps / kMicrosPerSecond;
  }
}

// Step times, layers and the latest run's start; returns the triples it exported.
std::set<Labels> ReadLatestRuns(pqxx::transaction_base& tx, const Cutoffs& at,
                                FleetSnapshot& snapshot) {
  auto rows = tx.exec_params(
      kLatestRuns + "SELECT model, workload, instance_type, " + store::EpochMicros("started_at") +
          ", device_us_per_step,"
          " coalesce((SELECT avg(cpu_us) FROM run_steps s WHERE s.run_id = l.run_id),"
          "  (SELECT sum(self_cpu_us) FROM op_stats o WHERE o.run_id = l.run_id) / steps, 0),"
          " steps, layers::text, cpu_basis FROM latest l",
      at.stale);
  std::set<Labels> triples;
  for (const auto& row : rows) {
    Labels triple = TripleLabels(row);
    triples.insert(triple);
    snapshot.latest_run[triple] = MicrosToSeconds(row[3]);
    // A CPU-only profile has no device time: its series basis is CPU time, exported once,
    // so that sum() over `time` does not count it twice.
    if (!row[8].as<bool>()) {
      snapshot.step_seconds[With(triple, "time", "device")] =
          row[4].as<double>() / kMicrosPerSecond;
    }
    snapshot.step_seconds[With(triple, "time", "cpu")] = row[5].as<double>() / kMicrosPerSecond;
    AddLayers(triple, row[7].as<std::string>(), row[6].as<double>(), snapshot.layer_seconds);
  }
  return triples;
}

// The latest runs' operators ranked by self time per step; those ranked beyond $2 come back
// as one row with a NULL op (their sum).
void ReadTopOps(pqxx::transaction_base& tx, const Cutoffs& at, std::size_t top_ops,
                FleetSnapshot& snapshot) {
  auto rows = tx.exec_params(
      kLatestRuns +
          ", per_op AS (SELECT l.run_id, l.model, l.workload, l.instance_type, o.op,"
          "  (CASE WHEN l.cpu_basis THEN o.self_cpu_us ELSE o.self_device_us END) / l.steps AS us"
          "  FROM latest l JOIN op_stats o USING (run_id)),"
          " ranked AS (SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY us DESC, op)"
          "  AS rank FROM per_op)"
          " SELECT model, workload, instance_type, CASE WHEN rank <= $2 THEN op END AS shown,"
          " sum(us) FROM ranked GROUP BY model, workload, instance_type, shown",
      at.stale, static_cast<long long>(top_ops));
  for (const auto& row : rows) {
    std::string op = row[3].is_null() ? "other" : row[3].as<std::string>();
    // += so that an operator literally named "other" shares the remainder's series.
    snapshot.op_seconds[With(TripleLabels(row), "op", op)] +=
        row[4].as<double>() / kMicrosPerSecond;
  }
}

// Both gauges per kind ("step", "drift"): 0, not absent, for every kind of every triple.
void ReadRegressions(pqxx::transaction_base& tx, const std::set<Labels>& triples,
                     FleetSnapshot& snapshot) {
  auto zero = [&](const Labels& triple) {
    for (const char* kind : {"step", "drift"}) {
      Labels of_kind = With(triple, "kind", kind);
      snapshot.regressions_suspected.try_emplace(of_kind, 0);
      for (const char* severity : {"critical", "warning", "info"}) {
        snapshot.regressions_open.try_emplace(With(of_kind, "severity", severity), 0);
      }
    }
  };
  for (const auto& triple : triples) zero(triple);
  auto rows = tx.exec(
      "SELECT model, workload, instance_type, state, severity, kind, count(*) FROM regressions"
      " WHERE state IN ('suspected', 'open', 'acknowledged')"
      " GROUP BY model, workload, instance_type, state, severity, kind");
  for (const auto& row : rows) {
    Labels triple = TripleLabels(row);
    zero(triple);
    Labels of_kind = With(triple, "kind", row[5].as<std::string>());
    auto count = row[6].as<double>();
    if (row[3].as<std::string>() == "suspected") {
      snapshot.regressions_suspected[of_kind] += count;
    } else {
      snapshot.regressions_open[With(of_kind, "severity", row[4].as<std::string>())] += count;
    }
  }
}

std::vector<std::string> SlotOutcomeNames() {
  std::vector<std::string> names;
  for (int i = v1::SlotOutcome_MIN; i <= v1::SlotOutcome_MAX; ++i) {
    if (v1::SlotOutcome_IsValid(i) && i != v1::SLOT_OUTCOME_UNSPECIFIED) {
      names.push_back(wire::SlotOutcomeName(static_cast<v1::SlotOutcome>(i)));
    }
  }
  return names;
}

void ReadJobs(pqxx::transaction_base& tx, const Cutoffs& at, FleetSnapshot& snapshot) {
  // A slot's finished_at is set by the agent's report; updated_at stands in if it is not.
  auto successes =
      tx.exec("SELECT j.name, " + store::EpochMicros("max(coalesce(s.finished_at, s.updated_at))") +
              " FROM jobs j JOIN job_slots s ON s.job = j.name"
              " AND s.outcome = 'succeeded' GROUP BY j.name");
  for (const auto& row : successes) {
    snapshot.job_last_success[{{"job", row[0].as<std::string>()}}] = MicrosToSeconds(row[1]);
  }
  auto recent = tx.exec_params(
      "WITH recent AS (SELECT job, outcome FROM job_slots"
      "  WHERE slot_time > $1::timestamptz AND slot_time <= $2::timestamptz)"
      " SELECT j.job, r.outcome, count(r.outcome) FROM"
      " (SELECT name AS job FROM jobs UNION SELECT job FROM recent) j"
      " LEFT JOIN recent r USING (job) GROUP BY j.job, r.outcome",
      at.day_ago, at.now);
  static const std::vector<std::string> outcomes = SlotOutcomeNames();
  for (const auto& row : recent) {
    Labels job = {{"job", row[0].as<std::string>()}};
    for (const auto& outcome : outcomes) {
      snapshot.job_slots_recent.try_emplace(With(job, "outcome", outcome), 0);
    }
    if (!row[1].is_null()) {
      snapshot.job_slots_recent[With(job, "outcome", row[1].as<std::string>())] =
          row[2].as<double>();
    }
  }
}

void ReadAgents(pqxx::transaction_base& tx, const Cutoffs& at, absl::Time connected_since,
                FleetSnapshot& snapshot) {
  auto rows = tx.exec_params("SELECT name, host, " + store::EpochMicros("last_seen") +
                                 " FROM agents WHERE last_seen >= $1::timestamptz",
                             at.stale);
  for (const auto& row : rows) {
    Labels agent = {{"agent", row[0].as<std::string>()}, {"host", row[1].as<std::string>()}};
    auto last_seen = absl::FromUnixMicros(row[2].as<long long>());
    snapshot.agent_last_seen[agent] = absl::ToDoubleSeconds(last_seen - absl::UnixEpoch());
    snapshot.agent_connected[agent] = last_seen >= connected_since ? 1 : 0;
  }
}

}  // namespace

// A gauge family and the label sets this FleetMetrics added to it: Apply sets the new values
// and removes the series that are gone. References returned by Family::Add dangle after
// Remove, so the map and the family change together.
class FleetMetrics::GaugeSet {
 public:
  GaugeSet(prometheus::Registry& registry, const std::string& name, const std::string& help)
      : family_(prometheus::BuildGauge().Name(name).Help(help).Register(registry)) {}

  void Apply(const Values& values) {
    for (auto it = current_.begin(); it != current_.end();) {
      if (values.count(it->first)) {
        ++it;
        continue;
      }
      family_.Remove(it->second);
      it = current_.erase(it);
    }
    for (const auto& [labels, value] : values) {
      auto [it, added] = current_.try_emplace(labels, nullptr);
      if (added) it->second = &family_.Add(labels);
      it->second->Set(value);
    }
  }

 private:
  prometheus::Family<prometheus::Gauge>& family_;
  std::map<Labels, prometheus::Gauge*> current_;
};

// The exported families (fleet_metrics.h describes each), and where a refresh puts their
// series.
struct FamilySpec {
  const char* name;
  const char* help;
  Values FleetSnapshot::*values;
};
constexpr FamilySpec kFamilies[] = {
    {"devtime_step_seconds", "Mean time per step of the latest OK run (time: device or cpu)",
     &FleetSnapshot::step_seconds},
    {"devtime_op_self_seconds_per_step",
     "Self time per step of the latest OK run's top operators; op=\"other\" sums the rest",
     &FleetSnapshot::op_seconds},
    {"devtime_layer_seconds_per_step", "Time per step in each layer, latest OK run",
     &FleetSnapshot::layer_seconds},
    {"devtime_latest_run_timestamp_seconds",
     "Start time of the latest OK run of each model, workload and instance type",
     &FleetSnapshot::latest_run},
    {"devtime_regressions_open", "Regressions in state open or acknowledged",
     &FleetSnapshot::regressions_open},
    {"devtime_regressions_suspected", "Regressions in state suspected (awaiting confirmation)",
     &FleetSnapshot::regressions_suspected},
    {"devtime_job_last_success_timestamp_seconds",
     "When a slot of the job last finished with outcome succeeded",
     &FleetSnapshot::job_last_success},
    {"devtime_job_slots_recent", "Job slots scheduled in the last 24 hours, by outcome",
     &FleetSnapshot::job_slots_recent},
    {"devtime_agent_last_seen_timestamp_seconds",
     "When the agent last announced itself or its session polled", &FleetSnapshot::agent_last_seen},
    {"devtime_agent_connected", "1 if the agent's session was seen within a few poll intervals",
     &FleetSnapshot::agent_connected},
};

FleetMetrics::FleetMetrics(store::Database& store, prometheus::Registry& registry,
                           FleetMetricsOptions options)
    : store_(store), options_(options) {
  for (const FamilySpec& family : kFamilies) {
    families_.push_back(std::make_unique<GaugeSet>(registry, family.name, family.help));
  }
  monitor_ = std::make_unique<MonitorMetrics>(store, registry);
}

FleetMetrics::~FleetMetrics() = default;

absl::Status FleetMetrics::Refresh(absl::Time now) {
  std::lock_guard lock(mu_);
  Cutoffs at{SqlTime(now - options_.stale_after), SqlTime(now - absl::Hours(24)), SqlTime(now)};
  absl::Time connected_since = now - absl::FromChrono(options_.session_poll) * kAgentConnectedPolls;
  FleetSnapshot snapshot;
  auto status = store_.Run("refresh fleet metrics", [&](pqxx::connection_base& c) {
    snapshot = FleetSnapshot();  // a retried attempt starts over
    // One snapshot for all queries, so the families agree with each other.
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    std::set<Labels> triples = ReadLatestRuns(tx, at, snapshot);
    ReadTopOps(tx, at, options_.top_ops, snapshot);
    ReadRegressions(tx, triples, snapshot);
    ReadJobs(tx, at, snapshot);
    ReadAgents(tx, at, connected_since, snapshot);
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  for (size_t i = 0; i < families_.size(); ++i) {
    families_[i]->Apply(snapshot.*kFamilies[i].values);
  }
  return monitor_->Refresh(now, options_.stale_after);
}

}  // namespace devtime::collector
