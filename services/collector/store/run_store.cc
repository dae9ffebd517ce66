#include "services/collector/store/run_store.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "proto/wire/validation.h"
#include "services/collector/store/series.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

using google::protobuf::util::TimeUtil;

double TotalSelfDevice(const v1::RunSummary& run) {
  double total = 0;
  for (const auto& op : run.ops()) total += op.self_device_us();
  return total;
}

std::string EnvironmentJson(const v1::RunSummary& run) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [key, value] : run.environment()) env[key] = value;
  return env.dump();
}

std::string LayersJson(const v1::RunSummary& run) {
  nlohmann::json layers = nlohmann::json::object();
  for (const auto& layer : run.layers()) layers[wire::LayerName(layer.layer())] = layer.time_us();
  return layers.dump();
}

std::string ArtifactsJson(const v1::RunSummary& run) {
  nlohmann::json artifacts = nlohmann::json::array();
  for (const auto& a : run.artifacts()) {
    artifacts.push_back({{"kind", a.kind()},
                         {"uri", a.uri()},
                         {"size_bytes", a.size_bytes()},
                         {"sha256", a.sha256()},
                         {"pair_key", a.pair_key()}});
  }
  return artifacts.dump();
}

std::optional<std::string> TimeText(const v1::RunSummary& run, bool finished) {
  if (finished && !run.has_finished_at()) return std::nullopt;
  return TimeUtil::ToString(finished ? run.finished_at() : run.started_at());
}

// ---- statements ---------------------------------------------------------------------------

const std::string kInsertRun =
    "INSERT INTO runs (run_id, job, model, workload, host, instance_type, device_kind, status,"
    " status_reason, started_at, finished_at, environment, capture, layers, artifacts, op_count,"
    " step_count, device_us_per_step, total_device_us, summary, content_sha256)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,"
    " $19, $20, sha256($20))"
    " ON CONFLICT (run_id) DO NOTHING RETURNING " +
    EpochMicros("received_at");

const std::string kCompareExisting = "SELECT content_sha256 = sha256($2), " +
                                     EpochMicros("received_at") + " FROM runs WHERE run_id = $1";

// Finding a run's series ids (the whole run, then one per operator) that the cache does
// not know, cheapest case first. A group (model, workload, instance type, metric) is one
// range of the series' unique index, so one scan finds all of its series, or in one probe
// that it has none. The ones still missing are then created by a plain INSERT, in a
// savepoint: measured on 100 k series, 501 new rows cost PostgreSQL 5 ms this way and 10 ms
// as INSERT ... ON CONFLICT behind a per-op lookup, which was a first run's largest cost.
// Only if a concurrent ingest created one of them first (a unique violation: it waited for
// that ingest to commit) does the ingest take the careful path: ON CONFLICT DO NOTHING, then
// a read of the ids created meanwhile by others, visible in that statement's newer snapshot.
// Both INSERTs create in the order of op, so that concurrent creators of overlapping series
// wait for each other in one order instead of deadlocking.
const std::string kGroupSeries =
    "SELECT op, series_id FROM series WHERE model = $1 AND workload = $2 AND instance_type = $3"
    " AND metric = $4";
const std::string kSeriesIds = kGroupSeries + " AND op = ANY($5::text[])";

const std::string kInsertSeries =
    "INSERT INTO series (model, workload, instance_type, metric, op)"
    " SELECT $1, $2, $3, $4, w.op FROM unnest($5::text[]) w (op) ORDER BY w.op";
const std::string kCreateSeries = kInsertSeries + " RETURNING op, series_id";
const std::string kCreateMissingSeries =
    kInsertSeries + " ON CONFLICT DO NOTHING RETURNING op, series_id";

// A run's rows, one statement per table, its numbers in binary arrays (database.h): no
// text for PostgreSQL to parse, one round trip each (a COPY takes two and, through libpqxx,
// only text). Each operator's per-step samples are one slice [lo:hi] of one flat array.
const std::string kInsertOpStats =
    "INSERT INTO op_stats (run_id, at, op, calls, self_cpu_us, total_cpu_us, self_device_us,"
    " total_device_us, step_self_device_us)"
    " SELECT $1, $2, o.op, o.calls, o.self_cpu_us, o.total_cpu_us, o.self_device_us,"
    " o.total_device_us, ($9::float8[])[o.lo:o.hi]"
    " FROM unnest($3::text[], $4::int8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[],"
    " $10::int4[], $11::int4[]) o (op, calls, self_cpu_us, total_cpu_us, self_device_us,"
    " total_device_us, lo, hi)";

const std::string kInsertSteps =
    "INSERT INTO run_steps (run_id, at, step, device_us, cpu_us)"
    " SELECT $1, $2, s.step, s.device_us, s.cpu_us"
    " FROM unnest($3::int4[], $4::float8[], $5::float8[]) s (step, device_us, cpu_us)";

// The points, computed here (OpPoint in series.h) rather than re-aggregated by SQL from the
// op_stats rows just written, with their series ids known: one multi-row INSERT, no join.
const std::string kInsertPoints =
    "INSERT INTO series_points (series_id, run_id, at, value, noise)"
    " SELECT p.series_id, $1, $2, p.value, p.noise"
    " FROM unnest($3::int8[], $4::float8[], $5::float8[]) p (series_id, value, noise)";

// The ingest's statements by name, prepared on each connection (pqxx prepares a registered
// statement there on its first use): a stored run then costs PostgreSQL no parsing and no
// planning, which were a tenth of its CPU per run once the numbers came in binary.
void PrepareIngest(pqxx::connection_base& c) {
  static const std::vector<std::pair<std::string, std::string>> statements = {
      {"ingest_run", kInsertRun},
      {"ingest_compare_existing", kCompareExisting},
      {"ingest_group_series", kGroupSeries},
      {"ingest_create_series", kCreateSeries},
      {"ingest_create_missing_series", kCreateMissingSeries},
      {"ingest_series_ids", kSeriesIds},
      {"ingest_op_stats", kInsertOpStats},
      {"ingest_steps", kInsertSteps},
      {"ingest_points", kInsertPoints},
  };
  for (const auto& [name, sql] : statements) c.prepare(name, sql);  // again: a no-op
}

const std::string kRunInfoColumns =
    "run_id::text, job, model, workload, host, instance_type, device_kind, status,"
    " status_reason, " +
    EpochMicros("started_at") + ", " + EpochMicros("received_at") +
    ", op_count, step_count, device_us_per_step, total_device_us";

v1::RunInfo RunInfoFromRow(const pqxx::row& row) {
  v1::RunInfo info;
  auto* id = info.mutable_identity();
  id->set_run_id(row[0].as<std::string>());
  id->set_job(row[1].as<std::string>());
  id->set_model(row[2].as<std::string>());
  id->set_workload(row[3].as<std::string>());
  id->set_host(row[4].as<std::string>());
  id->set_instance_type(row[5].as<std::string>());
  id->set_device_kind(wire::DeviceKindFromName(row[6].as<std::string>()));
  info.set_status(wire::RunStatusFromName(row[7].as<std::string>()));
  info.set_status_reason(row[8].as<std::string>());
  *info.mutable_started_at() = FromMicros(row[9].as<long long>());
  *info.mutable_received_at() = FromMicros(row[10].as<long long>());
  info.set_op_count(row[11].as<unsigned>());
  info.set_step_count(row[12].as<unsigned>());
  info.set_device_us_per_step(row[13].as<double>());
  info.set_total_device_us(row[14].as<double>());
  return info;
}

void WriteOpStats(pqxx::work& tx, const v1::RunSummary& run, const std::string& at) {
  std::vector<std::string> names;
  std::vector<std::int64_t> calls;
  std::vector<double> self_cpu, total_cpu, self_device, total_device, samples;
  std::vector<std::int32_t> lo, hi;  // 1-based, inclusive: op i's samples are samples[lo:hi]
  for (const auto& op : run.ops()) {
    names.push_back(op.name());
    calls.push_back(static_cast<std::int64_t>(op.calls()));
    self_cpu.push_back(op.self_cpu_us());
    total_cpu.push_back(op.total_cpu_us());
    self_device.push_back(op.self_device_us());
    total_device.push_back(op.total_device_us());
    lo.push_back(static_cast<std::int32_t>(samples.size() + 1));
    samples.insert(samples.end(), op.step_self_device_us().begin(), op.step_self_device_us().end());
    hi.push_back(static_cast<std::int32_t>(samples.size()));
  }
  tx.exec_prepared("ingest_op_stats", run.identity().run_id(), at, BinaryTextArray(names),
                   BinaryInt8Array(calls), BinaryFloat8Array(self_cpu),
                   BinaryFloat8Array(total_cpu), BinaryFloat8Array(self_device),
                   BinaryFloat8Array(total_device), BinaryFloat8Array(samples), BinaryInt4Array(lo),
                   BinaryInt4Array(hi));
}

void WriteSteps(pqxx::work& tx, const v1::RunSummary& run, const std::string& at) {
  if (run.steps_size() == 0) return;
  std::vector<std::int32_t> steps;
  std::vector<double> device, cpu;
  for (const auto& step : run.steps()) {
    steps.push_back(static_cast<std::int32_t>(step.step()));  // validated: <= 2^31-1
    device.push_back(step.device_us());
    cpu.push_back(step.cpu_us());
  }
  tx.exec_prepared("ingest_steps", run.identity().run_id(), at, BinaryInt4Array(steps),
                   BinaryFloat8Array(device), BinaryFloat8Array(cpu));
}

std::string SeriesKeyOf(const v1::RunSummary& run) {
  const auto& id = run.identity();
  // Names cannot contain control characters (validation): '\n' separates them.
  return id.model() + '\n' + id.workload() + '\n' + id.instance_type() + '\n' + MetricOf(run) +
         '\n';
}

// The lowest and highest run id starting with `typed`, so a prefix is looked up as a range
// of the primary key; INVALID_ARGUMENT, saying what to type, when `typed` is not the start
// of a UUID or has fewer than kMinRunIdPrefix hex digits. Capitals are the same digits:
// run ids are stored in lowercase, and people copy them from wherever they saw them.
absl::StatusOr<std::pair<std::string, std::string>> PrefixRange(const std::string& typed) {
  std::string prefix = typed;
  for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string low = "00000000-0000-0000-0000-000000000000";
  std::string high = "ffffffff-ffff-ffff-ffff-ffffffffffff";
  auto refused = [&](const std::string& why) {
    return absl::InvalidArgumentError("run '" + wire::PrintableText(typed, 64) + "': " + why +
                                      ": give a run id, a prefix of one (at least " +
                                      std::to_string(kMinRunIdPrefix) +
                                      " hex digits, like 08f66244) or latest");
  };
  if (prefix.size() > low.size()) return refused("not a UUID");
  int digits = 0;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    bool dash = low[i] == '-';
    char c = prefix[i];
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (dash ? c != '-' : !hex) return refused("not the start of a UUID");
    digits += dash ? 0 : 1;
    low[i] = high[i] = c;
  }
  if (digits < kMinRunIdPrefix) {
    return refused("a prefix of " + std::to_string(digits) + " hex digits is too short");
  }
  return std::pair{low, high};
}

// " of model M, workload W, instance type T, device D": the runs a reference was looked up
// among ("" = all of them).
std::string ScopeText(const RunRef& ref) {
  std::string scope;
  auto add = [&scope](const std::string& part) { scope += (scope.empty() ? " of " : ", ") + part; };
  if (!ref.model.empty()) add("model " + ref.model);
  if (!ref.workload.empty()) add("workload " + ref.workload);
  if (ref.instance_type) {
    add("instance type " + (ref.instance_type->empty() ? "unknown" : *ref.instance_type));
  }
  if (!ref.device_kind.empty()) add("device " + ref.device_kind);
  if (!ref.except_run_id.empty()) add("other than run " + ref.except_run_id);
  return scope;
}

// The SQL condition that keeps the runs of `ref`'s scope, on the parameters $first (model),
// $first+1 (workload), $first+2 (instance type, NULL = any) and $first+3 (device kind).
std::string ScopeCondition(int first) {
  auto p = [first](int i) { return "$" + std::to_string(first + i); };
  return "(" + p(0) + " = '' OR model = " + p(0) + ") AND (" + p(1) +
         " = '' OR workload = " + p(1) + ") AND (" + p(2) +
         "::text IS NULL OR instance_type = " + p(2) + ") AND (" + p(3) +
         " = '' OR device_kind = " + p(3) + ")";
}

// "ID (model/workload, started)": one of the runs an ambiguous prefix names.
std::string MatchText(const v1::RunInfo& run) {
  const auto& id = run.identity();
  return id.run_id() + " (" + id.model() + "/" + id.workload() + ", " +
         wire::FormatTime(run.started_at()) + ")";
}

// The series ids of one run that the cache did not know: found or created in the run's
// transaction (see kGroupSeries for the order of attempts), and learned for the cache.
class SeriesLookup {
 public:
  struct Group {
    const std::string& model;
    const std::string& workload;
    const std::string& instance_type;
    const std::string& metric;
  };
  SeriesLookup(pqxx::work& tx, Group group) : tx_(tx), group_(group) {}

  void Want(const std::string& op, std::size_t index) { wanted_.emplace(op, index); }

  // Fills series_ids[index] for every wanted op. `group_cached`: some of the group's series
  // are cached, so it exists and the few missing ones are probed by name, not by scanning it.
  void Resolve(bool group_cached, std::vector<std::int64_t>& series_ids) {
    if (wanted_.empty()) return;
    if (group_cached) {
      Learn(Exec("ingest_series_ids", Missing()), series_ids);
    } else {
      Learn(Exec("ingest_group_series"), series_ids);
    }
    if (wanted_.empty()) return;
    if (!CreateAtOnce(series_ids)) {
      Learn(Exec("ingest_create_missing_series", Missing()), series_ids);
      if (!wanted_.empty()) Learn(Exec("ingest_series_ids", Missing()), series_ids);
    }
  }

  std::vector<std::pair<std::string, long long>> learned() && { return std::move(learned_); }

 private:
  // The plain INSERT of every missing series, in a savepoint; false (nothing created) when a
  // concurrent ingest created one of them first.
  bool CreateAtOnce(std::vector<std::int64_t>& series_ids) {
    // An explicit savepoint: libpqxx 6.4's subtransaction did not roll back to it after the
    // failed statement, leaving the transaction aborted.
    tx_.exec("SAVEPOINT create_series");
    pqxx::result rows;
    try {
      rows = tx_.exec_prepared("ingest_create_series", group_.model, group_.workload,
                               group_.instance_type, group_.metric, BinaryTextArray(Missing()));
    } catch (const pqxx::unique_violation&) {
      tx_.exec("ROLLBACK TO SAVEPOINT create_series");  // the transaction goes on
      return false;
    }
    tx_.exec("RELEASE SAVEPOINT create_series");
    Learn(rows, series_ids);
    return true;
  }

  template <typename... Ops>
  pqxx::result Exec(const char* statement, const Ops&... ops) {
    if constexpr (sizeof...(ops) == 0) {
      return tx_.exec_prepared(statement, group_.model, group_.workload, group_.instance_type,
                               group_.metric);
    } else {
      return tx_.exec_prepared(statement, group_.model, group_.workload, group_.instance_type,
                               group_.metric, BinaryTextArray(ops)...);
    }
  }

  std::vector<std::string> Missing() const {
    std::vector<std::string> ops;
    ops.reserve(wanted_.size());
    for (const auto& [op, index] : wanted_) ops.push_back(op);
    return ops;
  }

  // Takes the ids in `rows` (op, series_id); a group scan also returns series this run does
  // not have, which are learned too: their ids are as valid.
  void Learn(const pqxx::result& rows, std::vector<std::int64_t>& series_ids) {
    for (const auto& row : rows) {
      std::string op = row[0].as<std::string>();
      long long series_id = row[1].as<long long>();
      if (auto it = wanted_.find(op); it != wanted_.end()) {
        series_ids[it->second] = series_id;
        wanted_.erase(it);
      }
      learned_.emplace_back(std::move(op), series_id);
    }
  }

  pqxx::work& tx_;
  Group group_;
  std::unordered_map<std::string, std::size_t> wanted_;  // op -> index in the run's series
  std::vector<std::pair<std::string, long long>> learned_;
};

}  // namespace

// Series ids by group (model/workload/instance type/metric) and op: one lock and no key
// building per run (501 concatenated keys were a tenth of the collector's CPU per upload).
// Series rows are never deleted, so an id once committed stays valid; ids are added only
// after the transaction that read or created them committed.
class RunStore::SeriesCache {
 public:
  // Fills ids[i] (0 = unknown) for each of `ops` the cache knows in `group`; whether it knew
  // any of them.
  bool Find(const std::string& group, const std::vector<std::string>& ops,
            std::vector<std::int64_t>& ids) {
    std::lock_guard lock(mu_);
    auto known = groups_.find(group);
    if (known == groups_.end()) return false;
    bool any = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (auto it = known->second.find(ops[i]); it != known->second.end()) {
        ids[i] = it->second;
        any = true;
      }
    }
    return any;
  }
  void Add(const std::string& group, const std::vector<std::pair<std::string, long long>>& ids) {
    if (ids.empty()) return;
    std::lock_guard lock(mu_);
    auto& known = groups_[group];
    for (const auto& [op, id] : ids) known.emplace(op, id);
  }

 private:
  std::mutex mu_;
  // guarded by mu_
  std::unordered_map<std::string, std::unordered_map<std::string, long long>> groups_;
};

RunStore::RunStore(Database& db)
    : db_(db),
      series_(std::make_unique<SeriesCache>()),
      monitor_(std::make_unique<MonitorStore>(db)),
      months_(db, HistoryTables()) {}
RunStore::~RunStore() = default;

// Writes the run's series points; returns the series ids it learned (for the cache, once
// committed).
std::vector<std::pair<std::string, long long>> RunStore::WriteSeriesPoints(
    pqxx::work& tx, const v1::RunSummary& run, const std::string& group, const std::string& at,
    const SeriesValue& point) {
  const auto& id = run.identity();
  const std::string metric = MetricOf(run);
  std::vector<std::string> ops{""};
  std::vector<std::optional<double>> values{point.value}, noises{point.noise};
  ops.reserve(run.ops_size() + 1);
  for (const auto& op : run.ops()) {
    SeriesValue op_point = OpPoint(run, op);
    ops.push_back(op.name());
    values.push_back(op_point.value);
    noises.push_back(op_point.noise);
  }
  std::vector<std::int64_t> series_ids(ops.size(), 0);
  const bool group_cached = series_->Find(group, ops, series_ids);
  SeriesLookup lookup{tx, {id.model(), id.workload(), id.instance_type(), metric}};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (series_ids[i] == 0) lookup.Want(ops[i], i);
  }
  lookup.Resolve(group_cached, series_ids);
  tx.exec_prepared("ingest_points", id.run_id(), at, BinaryInt8Array(series_ids),
                   BinaryFloat8Array(values), BinaryFloat8Array(noises));
  return std::move(lookup).learned();
}

absl::StatusOr<IngestOutcome> RunStore::IngestRun(const v1::RunSummary& run) {
  if (run.source() == v1::RUN_SOURCE_MONITOR) {  // a window of its own table (issue 24)
    auto stored = monitor_->Ingest(run);
    if (!stored.ok()) return stored.status();
    return IngestOutcome{*stored ? IngestResult::kStored : IngestResult::kDuplicate,
                         TimeUtil::GetCurrentTime()};
  }
  // Before the ingest transaction and its shared partitions lock (MonthPartitions says why).
  if (absl::Status month = months_.Ensure(absl::FromUnixSeconds(run.started_at().seconds()));
      !month.ok()) {
    return month;
  }
  const std::string payload = DeterministicBytes(run);
  const auto& id = run.identity();
  const SeriesValue point = RunValue(run);
  IngestOutcome outcome{};
  auto status = db_.Run("store run " + id.run_id(), [&](pqxx::connection_base& c) -> absl::Status {
    PrepareIngest(c);
    pqxx::work tx{c};
    // Shared with every other ingest, exclusive to devtime_ensure_month (migrations.cc): a month
    // partition is never created, and rows moved out of DEFAULT into it, while a run's rows
    // are on their way into DEFAULT — they would violate the new partition's constraint and
    // fail the upload (a backfilled month created by housekeeping mid-import, issue 26).
    tx.exec("SELECT pg_advisory_xact_lock_shared(hashtext('devtime-partitions'))");
    auto inserted = tx.exec_prepared(
        "ingest_run", id.run_id(), id.job(), id.model(), id.workload(), id.host(),
        id.instance_type(), wire::DeviceKindName(id.device_kind()),
        wire::RunStatusName(run.status()), run.status_reason(), *TimeText(run, false),
        TimeText(run, true), EnvironmentJson(run), wire::ToJson(run.capture()), LayersJson(run),
        ArtifactsJson(run), run.ops_size(), run.steps_size(), point.value, TotalSelfDevice(run),
        pqxx::binarystring(payload));
    if (inserted.empty()) {
      auto existing =
          tx.exec_prepared1("ingest_compare_existing", id.run_id(), pqxx::binarystring(payload));
      tx.commit();
      if (!existing[0].as<bool>()) {
        return absl::AlreadyExistsError("run.identity.run_id: run " + id.run_id() +
                                        " is already stored with different content");
      }
      outcome = {IngestResult::kDuplicate, FromMicros(existing[1].as<long long>())};
      // A retry of an ack that waited in vain: the first commit may still be on one node.
      return db_.AwaitStandbyFlush(c, id.run_id());
    }
    const std::string at = TimeUtil::ToString(run.started_at());
    WriteOpStats(tx, run, at);
    WriteSteps(tx, run, at);
    // Invalid and failed runs are history, never data: zeros must not look like a speed-up.
    std::vector<std::pair<std::string, long long>> learned;
    const std::string group = SeriesKeyOf(run);
    if (run.status() == v1::RUN_STATUS_OK) learned = WriteSeriesPoints(tx, run, group, at, point);
    tx.commit();
    series_->Add(group, learned);
    outcome = {IngestResult::kStored, FromMicros(inserted[0][0].as<long long>())};
    return db_.AwaitStandbyFlush(c, id.run_id());
  });
  if (!status.ok()) return status;
  return outcome;
}

absl::StatusOr<std::vector<v1::RunInfo>> RunStore::ListRuns(const RunFilter& filter) {
  if (filter.source == "monitor") {
    return monitor_->List(filter.model, filter.workload, filter.limit, filter.after);
  }
  std::optional<std::string> since;
  if (filter.since) since = TimeUtil::ToString(*filter.since);
  std::optional<std::string> after_time;
  if (filter.after) after_time = TimestampText(FromMicros(filter.after->first));
  const std::string after_run = filter.after ? filter.after->second : "";
  std::vector<v1::RunInfo> runs;
  auto status = db_.Read("list runs", [&](pqxx::connection_base& c) {
    runs.clear();
    pqxx::read_transaction tx{c};
    auto rows =
        tx.exec_params("SELECT " + kRunInfoColumns +
                           " FROM runs WHERE ($1 = '' OR model = $1) AND ($2 = '' OR workload = $2)"
                           " AND ($3::timestamptz IS NULL OR started_at >= $3::timestamptz)"
                           " AND ($5::timestamptz IS NULL OR started_at < $5::timestamptz"
                           " OR (started_at = $5::timestamptz AND run_id > NULLIF($6, '')::uuid))"
                           " ORDER BY started_at DESC, run_id LIMIT $4",
                       filter.model, filter.workload, since, filter.limit, after_time, after_run);
    for (const auto& row : rows) runs.push_back(RunInfoFromRow(row));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return runs;
}

absl::StatusOr<v1::GetRunResponse> RunStore::GetRun(const std::string& run_id) {
  if (!wire::IsCanonicalUuid(run_id)) {
    return absl::InvalidArgumentError("run_id: '" + run_id.substr(0, 64) +
                                      "' is not a lowercase UUID");
  }
  v1::GetRunResponse response;
  bool found = false;
  auto status = db_.Read("get run " + run_id, [&](pqxx::connection_base& c) -> absl::Status {
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params(
        "SELECT " + kRunInfoColumns + ", summary FROM runs WHERE run_id = $1", run_id);
    found = !rows.empty();
    if (!found) return absl::OkStatus();
    *response.mutable_info() = RunInfoFromRow(rows[0]);
    pqxx::binarystring summary(rows[0][15]);
    if (!response.mutable_run()->ParseFromString(summary.str())) {
      return absl::DataLossError("run " + run_id + ": stored summary does not parse");
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!found) return absl::NotFoundError("run " + run_id + " is not stored");
  return response;
}

absl::StatusOr<v1::RunInfo> RunStore::ResolveLatest(const RunRef& ref) {
  std::optional<v1::RunInfo> newest;
  auto status = db_.Read("resolve latest run", [&](pqxx::connection_base& c) {
    newest.reset();
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params(
        "SELECT " + kRunInfoColumns + " FROM runs WHERE " + ScopeCondition(2) +
            " AND run_id::text <> $1"
            " ORDER BY started_at DESC, run_id LIMIT 1",
        ref.except_run_id, ref.model, ref.workload, ref.instance_type, ref.device_kind);
    if (!rows.empty()) newest = RunInfoFromRow(rows[0]);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!newest) return absl::NotFoundError("latest: no run" + ScopeText(ref) + " is stored");
  return std::move(*newest);
}

absl::StatusOr<v1::RunInfo> RunStore::ResolveRun(const RunRef& ref) {
  if (ref.ref == "latest") return ResolveLatest(ref);
  auto range = PrefixRange(ref.ref);
  if (!range.ok()) return range.status();
  constexpr int kListed = 5;  // matches an ambiguous prefix's error names
  std::vector<v1::RunInfo> matches;
  auto status = db_.Read("resolve run " + ref.ref, [&](pqxx::connection_base& c) {
    matches.clear();
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params("SELECT " + kRunInfoColumns +
                                   " FROM runs WHERE run_id BETWEEN $1::uuid AND $2::uuid"
                                   " AND " +
                                   ScopeCondition(4) + " ORDER BY run_id LIMIT $3",
                               range->first, range->second, kListed + 1, ref.model, ref.workload,
                               ref.instance_type, ref.device_kind);
    for (const auto& row : rows) matches.push_back(RunInfoFromRow(row));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (matches.empty()) {
    return absl::NotFoundError("no run" + ScopeText(ref) + " has an id starting with '" + ref.ref +
                               "'");
  }
  if (matches.size() == 1) return std::move(matches.front());
  std::string listed;
  for (std::size_t i = 0; i < matches.size() && i < kListed; ++i) {
    listed += "\n  " + MatchText(matches[i]);
  }
  if (matches.size() > kListed) listed += "\n  ...";
  return absl::FailedPreconditionError(
      "run id prefix '" + ref.ref + "' names " +
      (matches.size() > kListed ? "more than " + std::to_string(kListed)
                                : std::to_string(matches.size())) +
      " runs" + ScopeText(ref) + "; type more of the id:" + listed);
}

absl::StatusOr<std::vector<v1::ModelInfo>> RunStore::ListModels() {
  std::vector<v1::ModelInfo> models;
  auto status = db_.Read("list models", [&](pqxx::connection_base& c) {
    models.clear();
    pqxx::read_transaction tx{c};
    // Workload names cannot contain control characters (validation), so '\n' separates them.
    auto rows = tx.exec(
        "SELECT model, string_agg(DISTINCT workload, E'\\n' ORDER BY workload), count(*), " +
        EpochMicros("max(started_at)") + " FROM runs GROUP BY model ORDER BY model");
    for (const auto& row : rows) {
      v1::ModelInfo& model = models.emplace_back();
      model.set_model(row[0].as<std::string>());
      std::string workloads = row[1].as<std::string>();
      for (std::size_t start = 0; start <= workloads.size();) {
        std::size_t end = workloads.find('\n', start);
        if (end == std::string::npos) end = workloads.size();
        model.add_workloads(workloads.substr(start, end - start));
        start = end + 1;
      }
      model.set_run_count(row[2].as<unsigned long long>());
      *model.mutable_last_run_at() = FromMicros(row[3].as<long long>());
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return models;
}

}  // namespace devtime::store
