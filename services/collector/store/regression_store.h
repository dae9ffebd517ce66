// devtime::store — regressions (alerts) in PostgreSQL (schema migration 4): their rows,
// every lifecycle transition with who and when, and the outbox of notification events.
//
// Lifecycle (analyze/lifecycle.h): suspected -> open -> acknowledged -> resolved / invalid.
// Entering a firing state (open, acknowledged) from a non-firing one stamps fired_at and
// queues an 'opened' event; leaving it stamps ended_at and queues 'resolved' or
// 'invalidated'. Events are written in the transition's own transaction, so a notification is
// never lost to a crash between the two; an event the webhook has not taken within 7 days is
// given up (PendingEvents skips it).
//
// Kinds: step and drift (opened by the analyzer from nightly runs) and latency (issue 24,
// migration 12: opened by MonitorStore from neuron-monitor windows; no runs of its own, its
// window and hosts in `latency`). All three live the same lifecycle, list and outbox.
//
// Errors: NOT_FOUND (unknown id), FAILED_PRECONDITION (transition not allowed from the
// current state), INVALID_ARGUMENT (bad request field, named), UNAVAILABLE (database).
//
// Thread-safety: safe for concurrent use; a transition locks its row (SELECT ... FOR UPDATE).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devtime/v1/regressions.pb.h"
#include "pqxx/pqxx"
#include "services/collector/analyze/regression.h"
#include "services/collector/notify/notifier.h"
#include "services/collector/store/database.h"

namespace devtime::store {

struct RegressionFilter {
  std::vector<v1::RegressionState> states;  // empty = the live ones (suspected, open, acked)
  std::string model;                        // "" = any
  std::string workload;                     // "" = any
  unsigned limit = 100;
  // Keyset paging: only regressions after (first_bad_at in microseconds, id) in the list's
  // order (first_bad_at newest first, then id, highest first).
  std::optional<std::pair<long long, int64_t>> after;
};

// Statements the analyzer's transaction runs (analysis_repository.h). pqxx exceptions reach
// Database::Run; the regressions' own errors are Status values.
namespace regression_sql {
// Inserts a new regression (in its state: a step suspected, a drift open, which stamps
// fired_at and queues its 'opened' event) and its creation transition; returns its id.
int64_t Insert(pqxx::work& tx, const analyze::NewRegression& created);
// Moves the regression from its current state (locked) to `transition.to`, records the
// transition and queues its notification event (analyze/lifecycle.h). NOT_FOUND,
// FAILED_PRECONDITION or INVALID_ARGUMENT when it may not.
absl::Status Transition(pqxx::work& tx, const analyze::Transition& transition);
// Opens a latency regression (kind "latency", issue 24: `r` as MonitorStore::Judge builds it,
// no runs, first_bad_at the first bad window's start) in state open, with its creation
// transition and its 'opened' event; its id, or nullopt when the series group already has one
// at that window.
std::optional<int64_t> InsertLatency(pqxx::work& tx, const v1::Regression& r,
                                     const std::string& reason);
// New figures (and summary) for a live drift regression; NOT_FOUND, or FAILED_PRECONDITION
// when it is not a live drift.
absl::Status UpdateDrift(pqxx::work& tx, const analyze::DriftUpdate& update);
// The oldest live (suspected, open, acknowledged) step regression of the series.
std::optional<analyze::LiveRegression> OldestLive(pqxx::work& tx, const analyze::SeriesKey& series);
// The series' live drift regression (at most one: a unique index says so).
std::optional<analyze::LiveRegression> LiveDrift(pqxx::work& tx, const analyze::SeriesKey& series);
// started_at (µs) of the first bad run (a drift: of its newest run) of the series' newest
// regression resolved as accepted_baseline: history before it is no longer the baseline.
std::optional<int64_t> AcceptedBaselineSince(pqxx::work& tx, const analyze::SeriesKey& series);
}  // namespace regression_sql

class RegressionStore : public collector::notify::AlertSource {
 public:
  explicit RegressionStore(Database& db) : db_(db) {}

  absl::StatusOr<std::vector<v1::Regression>> List(const RegressionFilter& filter);
  // With its transitions, oldest first.
  absl::StatusOr<v1::Regression> Get(int64_t id);
  // A person's triage (devtimectl): acknowledged, resolved or invalid; needs an actor.
  absl::StatusOr<v1::Regression> Transition(const analyze::Transition& transition);

  // Runs `pass` (one notification pass) unless another collector on this database is running
  // one: passes are serialised by a transaction-level advisory lock held while `pass` runs,
  // so two collectors never deliver the same webhook events at once. Returns whether `pass`
  // ran, or its error.
  absl::StatusOr<bool> AsOnlyNotifier(const std::function<absl::Status()>& pass);

  // notify::AlertSource
  absl::StatusOr<std::vector<v1::Regression>> AlertsToPush(absl::Time ended_since) override;
  absl::StatusOr<std::vector<Event>> PendingEvents(int limit) override;
  absl::Status MarkDelivered(int64_t event_id) override;
  absl::Status MarkFailed(int64_t event_id, const std::string& error) override;

 private:
  Database& db_;
};

}  // namespace devtime::store
