// Real alert receivers for integration tests: tests/support/webhook_receiver.py (a JSON
// webhook endpoint that records every body) and Debian's Alertmanager routing to one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/process.h"
#include "tests/support/wait.h"  // the receivers wait with it; their users do too

namespace devtime::testing {

// tests/support/webhook_receiver.py on a port of its choosing; answers 500 to the first
// `fail_first` requests.
class WebhookReceiver {
 public:
  WebhookReceiver(const std::string& dir, const std::string& name, int fail_first = 0);

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  std::string Log() const;
  // Every body received so far, in order.
  std::vector<nlohmann::json> Bodies() const;

 private:
  std::string out_, log_;
  int port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

// Alertmanager on loopback, gossip off, grouping per regression, flushing every second and
// delivering to `receiver_url` (resolved notifications too).
class Alertmanager {
 public:
  Alertmanager(const std::string& dir, const std::string& receiver_url);

  // SIGKILL, as in a crash, and start again on the same port with the same storage.
  void Restart();

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string Log() const;

  // The alert Alertmanager holds for regression `id` (GET /api/v2/alerts), if any.
  std::optional<nlohmann::json> Alert(int64_t id) const;

 private:
  void Start();

  std::string dir_;
  int port_;
  std::string log_;
  std::unique_ptr<Subprocess> process_;
};

// The first notification Alertmanager sent to `receiver` with `status` ("firing",
// "resolved") for regression `id`.
std::optional<nlohmann::json> AlertmanagerNotification(const WebhookReceiver& receiver,
                                                       const std::string& status, int64_t id);

}  // namespace devtime::testing
