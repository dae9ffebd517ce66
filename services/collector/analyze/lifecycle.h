// devtime::analyze — the regression lifecycle (regressions.proto), as pure rules:
//
//   suspected -> open -> acknowledged -> resolved (fixed | accepted_baseline)
//        \________\____________\______-> invalid
//
// Entering a firing state (open, acknowledged) from a non-firing one queues an "opened"
// notification; leaving it queues "resolved" or "invalidated". The store applies these rules
// inside the transition's transaction (store/regression_store.h).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "services/collector/analyze/regression.h"

namespace devtime::analyze {

// OK when `to` may follow `from`; FAILED_PRECONDITION naming both otherwise. RESOLVED needs a
// resolution, and only RESOLVED may carry one (INVALID_ARGUMENT).
absl::Status CheckTransition(State from, State to, Resolution resolution);

enum class NotificationEvent { kOpened, kResolved, kInvalidated };

// The notification a transition queues, if any.
std::optional<NotificationEvent> EventFor(State from, State to);

// "opened", "resolved", "invalidated": the stored event kind (regression_events.kind).
std::string EventName(NotificationEvent event);

}  // namespace devtime::analyze
