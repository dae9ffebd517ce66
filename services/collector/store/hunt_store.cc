#include "services/collector/store/hunt_store.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/wire/change.h"
#include "proto/wire/job_spec.h"
#include "proto/wire/json.h"
#include "proto/wire/time.h"
#include "services/collector/store/job_store.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

using analyze::CulpritLevel;

// What a hunt needs of its regression.
struct Target {
  std::string job, host, metric, state;
  double before = 0, after = 0, sigma = 0;
  v1::Attribution attribution;
};

absl::StatusOr<Target> LoadTarget(pqxx::work& tx, int64_t id) {
  auto rows = tx.exec_params(
      "SELECT job, host, metric, state, before_us, after_us, baseline_sigma_us,"
      " attribution::text FROM regressions WHERE regression_id = $1",
      id);
  if (rows.empty()) return absl::NotFoundError("no regression " + std::to_string(id));
  const auto& row = rows[0];
  Target t{.job = row[0].as<std::string>(),
           .host = row[1].as<std::string>(),
           .metric = row[2].as<std::string>(),
           .state = row[3].as<std::string>(),
           .before = row[4].as<double>(),
           .after = row[5].as<double>(),
           .sigma = row[6].as<double>()};
  if (auto s = wire::ParseJson(row[7].as<std::string>(), "regression attribution", &t.attribution);
      !s.ok()) {
    return absl::DataLossError(s.message());
  }
  return t;
}

void SaveHunt(pqxx::work& tx, int64_t id, const v1::Hunt& hunt) {
  tx.exec_params(
      "INSERT INTO hunts (regression_id, state, hunt) VALUES ($1, $2, $3::jsonb)"
      " ON CONFLICT (regression_id) DO UPDATE SET state = EXCLUDED.state, hunt = EXCLUDED.hunt,"
      " updated_at = now()",
      id, analyze::HuntStateName(hunt.state()), JsonForSql(hunt));
}

std::vector<std::string> Sources(const v1::JobSpec& job) {
  std::vector<std::string> keys;
  for (const auto& pin : job.pins()) {
    if (!pin.source().empty()) keys.push_back(pin.key());
  }
  return keys;
}

google::protobuf::Timestamp Now() { return wire::ToTimestamp(std::chrono::system_clock::now()); }

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// The culprit run tagged `tag`, when it came back: judged (or failed) into `run`.
bool Collect(pqxx::work& tx, const v1::Hunt& hunt, const std::string& metric, v1::HuntRun& run,
             v1::Hunt& into) {
  auto rows = tx.exec_params(
      "SELECT run_id::text, status, status_reason, summary FROM runs"
      " WHERE environment ? 'devtime.hunt' AND environment->>'devtime.hunt' = $1"
      " ORDER BY received_at LIMIT 1",
      run.tag());
  if (rows.empty()) return false;
  run.set_run_id(rows[0][0].as<std::string>());
  if (rows[0][1].as<std::string>() != "ok") {
    run.set_judgement("failed");
    run.set_reason(rows[0][2].as<std::string>().substr(0, 500));
    return true;
  }
  v1::RunSummary summary;
  summary.ParseFromString(pqxx::binarystring(rows[0][3]).str());
  const wire::StepSample sample = wire::StepSampleOf(summary);
  CulpritLevel level{
      .value = wire::TimePerStep(summary), .step_stddev = sample.stddev, .steps = sample.steps};
  (void)metric;  // TimePerStep is the series value of the run's metric (device or self CPU)
  const analyze::Judgement judged = analyze::Judge(hunt, level);
  run.set_value(level.value);
  run.set_judgement(judged.judgement);
  run.set_z(judged.z);
  // The value sources the agent ran for this run (the first one): KEY -> ordered values.
  for (const auto& [pin, ordered] : wire::SourceValues(summary.environment())) {
    std::string& values = (*into.mutable_values())[pin];
    values += (values.empty() ? "" : " ") + ordered;
  }
  return true;
}

}  // namespace

HuntDriver::HuntDriver(Database& db, analyze::HuntOptions options, HuntEvents events)
    : db_(db), options_(options), events_(std::move(events)) {}

HuntDriver::~HuntDriver() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HuntDriver::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void HuntDriver::Loop() {
  while (true) {
    (void)Pass();  // a database away now is retried at the next pass
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, absl::ToChronoMilliseconds(options_.poll),
                       [&] { return stopping_; })) {
      return;
    }
  }
}

absl::Status HuntDriver::Pass() {
  if (options_.enabled) {
    // Regressions that became open in the last day and have no hunt yet (not even a "none").
    auto fresh = db_.Transact(
        "find regressions to hunt", [&](pqxx::work& tx) -> absl::StatusOr<std::vector<int64_t>> {
          std::vector<int64_t> ids;
          for (const auto& row : tx.exec("SELECT regression_id FROM regressions r WHERE state IN"
                                         " ('open', 'acknowledged') AND kind = 'step' AND job <> ''"
                                         " AND fired_at > now() - interval '1 day' AND NOT EXISTS"
                                         " (SELECT 1 FROM hunts h WHERE h.regression_id ="
                                         " r.regression_id) ORDER BY regression_id")) {
            ids.push_back(row[0].as<int64_t>());
          }
          return ids;
        });
    if (!fresh.ok()) return fresh.status();
    for (int64_t id : *fresh) {
      auto started = db_.Transact("start hunt", [&](pqxx::work& tx) -> absl::Status {
        if (!tx.exec_params("SELECT 1 FROM hunts WHERE regression_id = $1", id).empty()) {
          return absl::OkStatus();
        }
        auto hunt = StartIn(tx, id, {}, 0, "collector");
        if (hunt.ok() || absl::IsNotFound(hunt.status())) return absl::OkStatus();
        // Not huntable (no job, nothing to pin): remembered, never shown.
        v1::Hunt none;
        none.set_verdict(std::string(hunt.status().message()));
        SaveHunt(tx, id, none);
        return absl::OkStatus();
      });
      if (!started.ok()) return started;
    }
  }
  auto hunting =
      db_.Transact("find hunts", [&](pqxx::work& tx) -> absl::StatusOr<std::vector<int64_t>> {
        std::vector<int64_t> ids;
        for (const auto& row : tx.exec("SELECT regression_id FROM hunts WHERE state = 'hunting'")) {
          ids.push_back(row[0].as<int64_t>());
        }
        return ids;
      });
  if (!hunting.ok()) return hunting.status();
  for (int64_t id : *hunting) {
    auto advanced = db_.Transact("advance hunt", [&](pqxx::work& tx) -> absl::Status {
      auto rows = tx.exec_params(
          "SELECT hunt::text FROM hunts WHERE regression_id = $1 AND state = 'hunting'"
          " FOR UPDATE SKIP LOCKED",
          id);
      if (rows.empty()) return absl::OkStatus();  // another collector's, or finished
      v1::Hunt hunt;
      if (auto s = wire::ParseJson(rows[0][0].as<std::string>(), "hunt", &hunt); !s.ok()) return s;
      return Advance(tx, id, hunt);
    });
    if (!advanced.ok()) return advanced;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Hunt> HuntDriver::StartHunt(int64_t id, const std::vector<std::string>& keys,
                                               uint32_t budget, const std::string& actor) {
  return db_.Transact("start hunt", [&](pqxx::work& tx) -> absl::StatusOr<v1::Hunt> {
    return StartIn(tx, id, keys, budget, actor);
  });
}

absl::StatusOr<v1::Hunt> HuntDriver::StartIn(pqxx::work& tx, int64_t id,
                                             const std::vector<std::string>& keys, uint32_t budget,
                                             const std::string& actor) {
  auto target = LoadTarget(tx, id);
  if (!target.ok()) return target.status();
  if (target->job.empty()) {
    return absl::FailedPreconditionError("regression " + std::to_string(id) +
                                         " has no job (an ad-hoc upload): nothing to re-run");
  }
  std::optional<v1::JobSpec> job = JobStore::FindJob(tx, target->job);
  if (!job) {
    return absl::FailedPreconditionError("job " + target->job + " of regression " +
                                         std::to_string(id) + " is gone");
  }
  std::set<std::string> pinnable, changed;
  for (const auto& pin : job->pins()) pinnable.insert(pin.key());
  v1::Hunt hunt;
  for (const auto& change : target->attribution.environment()) {
    changed.insert(change.key());
    if (!pinnable.count(change.key()) || change.before().empty() || change.after().empty())
      continue;
    if (!keys.empty() && std::find(keys.begin(), keys.end(), change.key()) == keys.end()) continue;
    *hunt.add_keys() = change;
  }
  for (const std::string& key : keys) {
    if (!changed.count(key) || !pinnable.count(key)) {
      return absl::InvalidArgumentError(
          "--keys: " + key +
          (changed.count(key) ? " cannot be pinned by job " + target->job
                              : " did not change in regression " + std::to_string(id)));
    }
  }
  if (hunt.keys_size() == 0) {
    return absl::FailedPreconditionError(
        "job " + target->job + " can pin none of the keys that changed (changed: " +
        (changed.empty() ? "none" : absl::StrJoin(changed, ", ")) +
        "; pins: " + (pinnable.empty() ? "none" : absl::StrJoin(pinnable, ", ")) + ")");
  }
  hunt.set_state(v1::HUNT_STATE_HUNTING);
  hunt.set_budget(budget > 0 ? budget : options_.budget);
  hunt.set_baseline(target->before);
  hunt.set_current(target->after);
  hunt.set_sigma(target->sigma);
  hunt.set_started_by(actor);
  *hunt.mutable_started_at() = Now();
  if (events_.started) events_.started();
  if (auto s = Advance(tx, id, hunt); !s.ok()) return s;
  return hunt;
}

absl::Status HuntDriver::Advance(pqxx::work& tx, int64_t id, v1::Hunt& hunt) {
  auto target = LoadTarget(tx, id);
  if (!target.ok()) return target.status();
  std::optional<v1::JobSpec> job = JobStore::FindJob(tx, target->job);
  auto finish = [&](const analyze::HuntVerdict& verdict) {
    analyze::Finish(hunt, verdict, absl::Now());
    if (events_.finished) {
      events_.finished(analyze::HuntStateName(hunt.state()),
                       absl::ToDoubleSeconds(absl::Now() - FromProto(hunt.started_at())));
    }
    SaveHunt(tx, id, hunt);
    // The webhook hears the verdict as an event of its own (Alertmanager: the annotation).
    tx.exec_params("INSERT INTO regression_events (regression_id, kind) VALUES ($1, 'hunted')", id);
    return absl::OkStatus();
  };
  if (!job) return finish({.verdict = "inconclusive (job " + target->job + " is gone)"});
  if (hunt.runs_size() > 0 && hunt.runs().rbegin()->judgement().empty()) {
    v1::HuntRun& waiting = *hunt.mutable_runs()->rbegin();
    if (Collect(tx, hunt, target->metric, waiting, hunt)) {
      hunt.set_runs_spent(hunt.runs_spent() + 1);
      if (events_.run_spent) events_.run_spent();
      if (waiting.reason().rfind("pins: ", 0) == 0) {
        return finish(
            {.verdict = "inconclusive (the agent could not pin: " + waiting.reason() + ")"});
      }
    } else {
      const absl::Duration timeout =
          options_.run_timeout > absl::ZeroDuration()
              ? options_.run_timeout
              : absl::Seconds(job->timeout_seconds() > 0 ? job->timeout_seconds() : 3600) +
                    absl::Minutes(5);
      if (absl::Now() - FromProto(waiting.requested_at()) < timeout) {
        SaveHunt(tx, id, hunt);
        return absl::OkStatus();
      }
      waiting.set_judgement("lost");
      waiting.set_reason("not back within " + absl::FormatDuration(timeout) +
                         " (agent away?): re-queued");
    }
  }
  auto next = analyze::Plan(hunt, Sources(*job));
  if (auto* verdict = std::get_if<analyze::HuntVerdict>(&next)) return finish(*verdict);
  const auto& run = std::get<analyze::NextRun>(next);
  v1::HuntRun* added = hunt.add_runs();
  added->mutable_pins()->insert(run.pins.begin(), run.pins.end());
  added->set_purpose(run.purpose);
  added->set_tag(absl::StrCat("r", id, "-", hunt.started_at().seconds(), "-", hunt.runs_size()));
  *added->mutable_requested_at() = Now();
  v1::RunNowRequest request;
  request.mutable_pins()->insert(run.pins.begin(), run.pins.end());
  request.set_hunt_tag(added->tag());
  for (const auto& range : run.resolve) *request.add_resolve() = range;
  const int64_t request_id = JobStore::InsertRunRequest(tx, target->job, target->host);
  tx.exec_params("UPDATE run_requests SET hunt = $2::jsonb WHERE request_id = $1", request_id,
                 JsonForSql(request));
  added->set_request_id(request_id);
  SaveHunt(tx, id, hunt);
  return absl::OkStatus();
}

}  // namespace devtime::store
