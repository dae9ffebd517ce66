// An AlertSource in memory, with the contract of notifier.h, for the notifier's tests (the
// database side, RegressionStore, is tested against PostgreSQL elsewhere).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "services/collector/notify/notifier.h"

namespace devtime::collector::notify {

class MemoryAlertSource : public AlertSource {
 public:
  std::vector<v1::Regression> regressions;  // all of them; AlertsToPush filters
  std::vector<Event> pending;               // oldest first
  std::vector<int64_t> delivered;
  std::vector<std::pair<int64_t, std::string>> failures;  // MarkFailed calls
  absl::Status read_error;                                // returned by the reads when not OK
  std::optional<absl::Time> last_ended_since;
  int reads = 0;

  absl::StatusOr<std::vector<v1::Regression>> AlertsToPush(absl::Time ended_since) override {
    ++reads;
    last_ended_since = ended_since;
    if (!read_error.ok()) return read_error;
    std::vector<v1::Regression> out;
    for (const auto& r : regressions) {
      bool firing =
          r.state() == v1::REGRESSION_STATE_OPEN || r.state() == v1::REGRESSION_STATE_ACKNOWLEDGED;
      bool ended_recently = (r.state() == v1::REGRESSION_STATE_RESOLVED ||
                             r.state() == v1::REGRESSION_STATE_INVALID) &&
                            r.has_ended_at() &&
                            absl::FromUnixSeconds(r.ended_at().seconds()) >= ended_since;
      if (firing || ended_recently) out.push_back(r);
    }
    return out;
  }

  absl::StatusOr<std::vector<Event>> PendingEvents(int limit) override {
    ++reads;
    if (!read_error.ok()) return read_error;
    auto count = std::min(pending.size(), static_cast<std::size_t>(limit));
    return std::vector<Event>(pending.begin(), pending.begin() + static_cast<long>(count));
  }

  absl::Status MarkDelivered(int64_t event_id) override {
    delivered.push_back(event_id);
    std::erase_if(pending, [&](const Event& e) { return e.event_id == event_id; });
    return absl::OkStatus();
  }

  absl::Status MarkFailed(int64_t event_id, const std::string& error) override {
    failures.emplace_back(event_id, error);
    return absl::OkStatus();
  }
};

}  // namespace devtime::collector::notify
