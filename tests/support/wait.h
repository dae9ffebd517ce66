// Waiting on a condition with a deadline: tests never sleep a fixed time for something
// to happen.
#pragma once

#include <chrono>
#include <functional>

namespace devtime::testing {

// Polls `done` every `poll` until it holds or `timeout` passes; false on timeout.
bool WaitUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(15),
               std::chrono::milliseconds poll = std::chrono::milliseconds(50));

}  // namespace devtime::testing
