#include "tests/support/alerting.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/support/files.h"

namespace devtime::testing {
namespace {

constexpr char kAlertmanager[] = "/usr/bin/prometheus-alertmanager";

}  // namespace

WebhookReceiver::WebhookReceiver(const std::string& dir, const std::string& name, int fail_first)
    : out_(dir + "/" + name + ".jsonl"), log_(dir + "/" + name + ".log") {
  std::string ready = dir + "/" + name + ".ready";
  process_ = std::make_unique<Subprocess>(
      std::vector<std::string>{
          "/usr/bin/python3", DEVTIME_SOURCE_DIR "/tests/support/webhook_receiver.py", "--out",
          out_, "--ready-file", ready, "--fail-first", std::to_string(fail_first)},
      log_);
  if (!WaitUntil([&] { return std::filesystem::exists(ready) || !process_->Running(); }) ||
      !process_->Running()) {
    throw std::runtime_error("webhook receiver did not start: " + ReadFile(log_));
  }
  port_ = std::stoi(ReadFile(ready));
}

std::string WebhookReceiver::Log() const { return ReadFile(log_); }

std::vector<nlohmann::json> WebhookReceiver::Bodies() const {
  std::vector<nlohmann::json> bodies;
  std::ifstream in(out_);
  for (std::string line; std::getline(in, line);) bodies.push_back(nlohmann::json::parse(line));
  return bodies;
}

Alertmanager::Alertmanager(const std::string& dir, const std::string& receiver_url)
    : dir_(dir), port_(FreePort()), log_(dir + "/alertmanager.log") {
  std::ofstream(dir + "/alertmanager.yml") << "route:\n"
                                              "  receiver: devtime-test\n"
                                              "  group_by: [regression_id]\n"
                                              "  group_wait: 1s\n"
                                              "  group_interval: 1s\n"
                                              "  repeat_interval: 1h\n"
                                              "receivers:\n"
                                              "  - name: devtime-test\n"
                                              "    webhook_configs:\n"
                                              "      - url: "
                                           << receiver_url
                                           << "\n"
                                              "        send_resolved: true\n";
  std::filesystem::create_directories(dir + "/data");
  Start();
}

void Alertmanager::Restart() {
  process_.reset();
  Start();
}

std::string Alertmanager::Log() const { return ReadFile(log_); }

std::optional<nlohmann::json> Alertmanager::Alert(int64_t id) const {
  auto alerts = nlohmann::json::parse(HttpGet(port_, "/api/v2/alerts"), nullptr, false);
  if (!alerts.is_array()) return std::nullopt;
  for (const auto& alert : alerts) {
    if (alert["labels"].value("regression_id", "") == std::to_string(id)) return alert;
  }
  return std::nullopt;
}

void Alertmanager::Start() {
  process_ = std::make_unique<Subprocess>(
      std::vector<std::string>{kAlertmanager, "--config.file=" + dir_ + "/alertmanager.yml",
                               "--storage.path=" + dir_ + "/data",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                               "--cluster.listen-address="},
      log_);
  if (!WaitUntil([&] { return !HttpGet(port_, "/-/ready").empty() || !process_->Running(); }) ||
      !process_->Running()) {
    throw std::runtime_error("alertmanager did not start: " + ReadFile(log_));
  }
}

std::optional<nlohmann::json> AlertmanagerNotification(const WebhookReceiver& receiver,
                                                       const std::string& status, int64_t id) {
  for (const auto& body : receiver.Bodies()) {
    if (body.value("status", "") != status) continue;
    for (const auto& alert : body["alerts"]) {
      if (alert["labels"].value("regression_id", "") == std::to_string(id)) return alert;
    }
  }
  return std::nullopt;
}

}  // namespace devtime::testing
