// AgentDaemon's delivery side (daemon.h): the uploader thread that sends spooled runs to the
// collector, each on its own retry schedule, and what happens to a run once it is delivered
// or set aside.
#include "agents/daemon/daemon.h"
#include "agents/daemon/daemon_internal.h"
#include "agents/daemon/delivery_errors.h"
#include "agents/daemon/uploader.h"
#include "proto/wire/channel.h"

namespace devtime::agent {

void AgentDaemon::Delivered(const std::string& run_id) {
  std::lock_guard delivery(delivery_mu_);
  awaiting_.erase(run_id);
}

void AgentDaemon::SetAside(const std::string& run_id, const std::string& why) {
  auto where = spool_->SetAside(run_id);
  const std::string kept =
      where.ok() ? "kept in " + where->string() : std::string(where.status().message());
  DaemonLog("run " + run_id + " set aside, not delivered: " + why + "; " + kept);
  if (metrics_) metrics_->RunSetAside();
  std::lock_guard delivery(delivery_mu_);
  auto it = awaiting_.find(run_id);
  if (it == awaiting_.end()) return;  // spooled before this start: its slot is not known here
  Report(FailedSlot(it->second, "run " + run_id + " was set aside, not delivered: " + why));
  awaiting_.erase(it);
}

void AgentDaemon::UploaderLoop() {
  auto stub = v1::Collector::NewStub(channel_);
  UploadOptions once;
  once.retry_for = std::chrono::milliseconds(0);  // this loop retries, with the spool as memory
  once.attempt_timeout = std::chrono::seconds(30);
  once.env = &env_;
  RetrySchedule retries(retry_);
  auto backoff = retry_.first_backoff;  // while the collector, not a run, is failing
  std::mt19937 jitter(std::random_device{}());
  while (!stopping_) {
    bool held = false;  // the collector failed every run for now: wait before the next pass
    for (const std::string& run_id : spool_->Pending()) {
      if (stopping_) break;
      // A run waiting out its own backoff is passed over: the runs after it go on.
      if (!retries.Due(run_id, env_.SteadyNow())) continue;
      auto run = spool_->Load(run_id);
      if (!run.ok()) {
        SetAside(run_id, std::string(run.status().message()));
        continue;
      }
      auto ack = Upload(*stub, *run, once);
      if (ack.ok()) {
        (void)spool_->Remove(run_id);  // only now: the collector has committed it
        retries.Forget(run_id);
        Delivered(run_id);
        backoff = retry_.first_backoff;
        continue;
      }
      if (metrics_) metrics_->UploadRetry();
      const std::string error(ack.status().message());
      const Delivery delivery = DeliveryOf(ack.status().code());
      if (delivery == Delivery::kRefusedForGood) {
        retries.Forget(run_id);
        SetAside(run_id, "the collector refused it: " + error);
        continue;
      }
      if (retries.Failed(run_id, delivery, env_.SteadyNow())) {
        retries.Forget(run_id);
        SetAside(run_id, "the collector failed on it " + std::to_string(retry_.set_aside_after) +
                             " times; the last: " + error);
        continue;
      }
      if (delivery == Delivery::kServerError) {
        DaemonLog("run " + run_id + ": " + error + " (server error " +
                  std::to_string(retries.ServerErrors(run_id)) + " of " +
                  std::to_string(retry_.set_aside_after) + " before it is set aside)");
        continue;  // the collector failed on this run: the others may still pass
      }
      held = true;  // down, or refusing everyone (delivery_errors.h): not this run's doing
      break;
    }
    auto stats = spool_->Stats();
    if (metrics_) metrics_->SpoolState(stats.runs, stats.bytes);
    std::chrono::milliseconds wait(1000);
    if (held) {
      wait = std::chrono::milliseconds(
          std::uniform_int_distribution<long long>(backoff.count() / 2, backoff.count())(jitter));
      backoff = std::min(backoff * 2, retry_.max_backoff);
    } else if (auto due = retries.NextDue()) {
      auto until_due = std::chrono::ceil<std::chrono::milliseconds>(*due - env_.SteadyNow());
      wait = std::clamp(until_due, std::chrono::milliseconds(1), wait);
    }
    std::unique_lock lock(mu_);
    env_.WaitFor(lock, changed_, wait, [&] { return stopping_.load() || (spooled_ && !held); });
    spooled_ = false;
  }
}

}  // namespace devtime::agent
