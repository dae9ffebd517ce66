// devtime::collector — regressions (alerts) in PostgreSQL (schema migration 4): their rows,
// every lifecycle transition with who and when, and the outbox of notification events.
//
// Lifecycle (regressions.proto): suspected -> open -> acknowledged -> resolved / invalid.
// Entering a firing state (open, acknowledged) from a non-firing one stamps fired_at and
// queues an 'opened' event; leaving it stamps ended_at and queues 'resolved' or
// 'invalidated'. Events are written in the transition's own transaction, so a notification is
// never lost to a crash between the two; an event the webhook has not taken within 7 days is
// given up (PendingEvents skips it).
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
#include "services/collector/notify/notifier.h"
#include "services/collector/store.h"

namespace devtime::collector {

// OK when `to` may follow `from`; FAILED_PRECONDITION naming both otherwise. RESOLVED needs a
// resolution, and only RESOLVED may carry one.
absl::Status CheckTransition(v1::RegressionState from, v1::RegressionState to,
                             v1::Resolution resolution);

// What the analyzer knows when it creates a regression (besides the Regression message).
struct NewRegression {
  v1::Regression regression;  // state, severity, identity, runs, figures, series, attribution
  double baseline_sigma_us = 0.0;
  int baseline_count = 0;
  std::optional<int64_t> confirmation_request_id;
};

// Statements the analyzer runs inside its own transaction.
namespace regression_sql {
int64_t Insert(pqxx::work& tx, const NewRegression& created, const std::string& reason);
// Moves `id` from its current state (locked) to `to`; records the transition and events.
absl::Status Transition(pqxx::work& tx, int64_t id, v1::RegressionState to,
                        v1::Resolution resolution, const std::string& actor,
                        const std::string& reason, const std::string& confirmation_run_id = "");
// The regressions of one series in a live state (suspected, open, acknowledged).
std::vector<v1::Regression> Live(pqxx::work& tx, const std::string& model,
                                 const std::string& workload, const std::string& instance_type,
                                 const std::string& metric);
// started_at of the first bad run of the newest regression of the series that was resolved
// as accepted_baseline: history before it is no longer the baseline.
std::optional<std::string> AcceptedBaselineSince(pqxx::work& tx, const std::string& model,
                                                 const std::string& workload,
                                                 const std::string& instance_type,
                                                 const std::string& metric);
}  // namespace regression_sql

class RegressionStore : public notify::AlertSource {
 public:
  explicit RegressionStore(Store& store) : store_(store) {}

  absl::StatusOr<std::vector<v1::Regression>> List(const v1::ListRegressionsRequest& request);
  // With its transitions, oldest first.
  absl::StatusOr<v1::Regression> Get(int64_t id);
  // A person's triage (devtimectl): acknowledged, resolved or invalid.
  absl::StatusOr<v1::Regression> Transition(const v1::TransitionRegressionRequest& request);

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
  Store& store_;
};

}  // namespace devtime::collector
