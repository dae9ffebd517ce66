#include "services/collector/analyze/lifecycle.h"

#include "absl/strings/str_cat.h"
#include "proto/wire/names.h"

namespace devtime::analyze {

absl::Status CheckTransition(State from, State to, Resolution resolution) {
  bool allowed = false;
  switch (from) {
    case v1::REGRESSION_STATE_SUSPECTED:
      allowed = to == v1::REGRESSION_STATE_OPEN || to == v1::REGRESSION_STATE_ACKNOWLEDGED ||
                to == v1::REGRESSION_STATE_RESOLVED || to == v1::REGRESSION_STATE_INVALID;
      break;
    case v1::REGRESSION_STATE_OPEN:
      allowed = to == v1::REGRESSION_STATE_ACKNOWLEDGED || to == v1::REGRESSION_STATE_RESOLVED ||
                to == v1::REGRESSION_STATE_INVALID;
      break;
    case v1::REGRESSION_STATE_ACKNOWLEDGED:
      allowed = to == v1::REGRESSION_STATE_RESOLVED || to == v1::REGRESSION_STATE_INVALID;
      break;
    default:  // resolved and invalid are final
      break;
  }
  if (!allowed) {
    return absl::FailedPreconditionError(
        absl::StrCat("the regression is ", wire::RegressionStateName(from), ": it cannot become ",
                     wire::RegressionStateName(to)));
  }
  if ((to == v1::REGRESSION_STATE_RESOLVED) != (resolution != v1::RESOLUTION_UNSPECIFIED)) {
    return absl::InvalidArgumentError(
        to == v1::REGRESSION_STATE_RESOLVED
            ? "resolution: required when resolving (fixed or accepted_baseline)"
            : "resolution: only a resolved regression has one");
  }
  return absl::OkStatus();
}

std::optional<NotificationEvent> EventFor(State from, State to) {
  using wire::IsFiring;
  if (!IsFiring(from) && IsFiring(to)) return NotificationEvent::kOpened;
  if (IsFiring(from) && to == v1::REGRESSION_STATE_RESOLVED) return NotificationEvent::kResolved;
  if (IsFiring(from) && to == v1::REGRESSION_STATE_INVALID) return NotificationEvent::kInvalidated;
  return std::nullopt;
}

std::string EventName(NotificationEvent event) {
  // In the order of the enumerators.
  static constexpr const char* kNames[] = {"opened", "resolved", "invalidated"};
  return kNames[static_cast<size_t>(event)];
}

}  // namespace devtime::analyze
