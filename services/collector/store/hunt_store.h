// devtime::store — culprit hunts in PostgreSQL (issue 25; schema migration 10) and the
// driver that runs them (analyze/hunt.h plans; this file requests, collects and records).
//
// A hunt is one row per regression (`hunts`: its state and its v1::Hunt as JSON), read with
// the regression wherever it is read (regression_store.cc), so `regressions show`, the
// report, Alertmanager and the webhook carry its verdict. A culprit run is a run-now request
// whose `hunt` column holds the pins and the run's tag (job_store.cc delivers it); the agent
// records the tag in the run's environment (devtime.hunt), which keeps the run out of its
// series (analysis_repository.cc) and lets the driver find it. Everything the driver knows is
// in the database: a restarted collector, or another one, carries on (rows are locked with
// SKIP LOCKED); a run that does not come back in time is re-queued (analyze::kMaxAttempts).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "devtime/v1/regressions.pb.h"
#include "services/collector/analyze/hunt.h"
#include "services/collector/store/database.h"

namespace devtime::store {

// What the driver reports, for metrics (from its thread, or from StartHunt's caller).
struct HuntEvents {
  std::function<void()> started;
  std::function<void()> run_spent;
  std::function<void(const std::string& outcome, double seconds_to_verdict)> finished;
};

class HuntDriver {
 public:
  HuntDriver(Database& db, analyze::HuntOptions options, HuntEvents events = {});
  ~HuntDriver();  // stops the thread
  HuntDriver(const HuntDriver&) = delete;
  HuntDriver& operator=(const HuntDriver&) = delete;

  // Starts the thread: a Pass every options.poll.
  void Start();
  // One pass: starts hunts for newly open regressions (options.enabled), collects the runs
  // that came back and requests the next ones.
  absl::Status Pass();
  // Starts (or re-runs, replacing the last hunt) the hunt of regression `id` over `keys`
  // (empty = every changed key the job can pin) with `budget` runs (0 = the default).
  // NOT_FOUND, FAILED_PRECONDITION (no job, nothing to pin), INVALID_ARGUMENT (a key in
  // `keys` did not change or cannot be pinned).
  absl::StatusOr<v1::Hunt> StartHunt(int64_t id, const std::vector<std::string>& keys,
                                     uint32_t budget, const std::string& actor);

 private:
  absl::StatusOr<v1::Hunt> StartIn(pqxx::work& tx, int64_t id, const std::vector<std::string>& keys,
                                   uint32_t budget, const std::string& actor);
  absl::Status Advance(pqxx::work& tx, int64_t id, v1::Hunt& hunt);
  void Loop();

  Database& db_;
  const analyze::HuntOptions options_;
  const HuntEvents events_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace devtime::store
