#include "agents/monitor/window_folder.h"

#include <cmath>

namespace devtime::agent::monitor {
namespace {

constexpr double kMicrosPerSecond = 1e6;

bool Feed(LatencySketch& sketch, const Percentiles& p, double executions) {
  double us[kMonitorPoints];
  for (int i = 0; i < kMonitorPoints; ++i) us[i] = p.seconds[i] * kMicrosPerSecond;
  return FeedPeriod(sketch, us, executions);
}

}  // namespace

WindowFolder::WindowFolder(const MonitorConfig& config, absl::Time stream_start)
    : config_(config), time_(stream_start) {}

absl::Time WindowFolder::WindowStart(absl::Time t) const {
  const int64_t window = static_cast<int64_t>(config_.window_seconds);
  const int64_t s = absl::ToUnixSeconds(t);
  return absl::FromUnixSeconds(s - ((s % window) + window) % window);
}

void WindowFolder::Resume(absl::Time now) { time_ = std::max(time_, now); }

void WindowFolder::Restore(std::vector<WindowSummary> open, absl::Time stream_time) {
  time_ = std::max(time_, stream_time);
  for (auto& w : open) open_[w.tag] = std::move(w);
}

std::vector<WindowSummary> WindowFolder::Open() const {
  std::vector<WindowSummary> out;
  for (const auto& [tag, w] : open_) out.push_back(w);
  return out;
}

std::vector<WindowSummary> WindowFolder::Add(const MonitorReport& report, FoldStats& stats) {
  // The report's period: the longest execution_stats period any application measured (the
  // groups of one report share the configured period), else the configured one.
  double period = 0;
  for (const auto& app : report.apps) {
    if (app.execution) period = std::max(period, app.execution->period_seconds);
  }
  if (!(period > 0) || period > 86400) period = config_.period_seconds;
  const absl::Time begin = time_;
  time_ += absl::Seconds(period);
  const absl::Time window = WindowStart(begin + absl::Seconds(period / 2));

  std::vector<WindowSummary> closed;
  // Every open window the stream has left is complete.
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.start < window) {
      closed.push_back(std::move(it->second));
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& app : report.apps) {
    auto mapped = MapApplication(config_, app.tag);
    if (!mapped) {
      ++stats.apps_unmapped;
      continue;
    }
    WindowSummary& w = open_[app.tag];
    if (w.periods == 0 && w.unusable_periods == 0) {
      w.tag = app.tag;
      w.model = mapped->first;
      w.workload = mapped->second;
      w.start = window;
      w.end = window + absl::Seconds(config_.window_seconds);
    }
    w.instance = report.instance;
    w.hardware = report.hardware;
    if (w.last_pid != 0 && app.pid != 0 && app.pid != w.last_pid) ++w.restarts;
    if (app.pid != 0) w.last_pid = app.pid;
    for (const auto& name : app.neff_names) w.neff_names.insert(name);
    std::string why = !app.error.empty() ? "entry error: " + app.error
                      : !app.execution_error.empty()
                          ? "execution_stats error: " + app.execution_error
                      : !app.problems.empty() ? app.problems.front()
                                              : "";
    if (app.utilization_pct) {
      w.utilization_sum += *app.utilization_pct;
      ++w.utilization_periods;
    }
    if (!app.execution) {
      if (!why.empty()) {
        ++w.unusable_periods;
        ++stats.apps_unusable;
        stats.warnings.push_back("application " + app.tag + ": " + why);
      }
      continue;
    }
    const ExecutionPeriod& e = *app.execution;
    ++w.periods;
    w.covered_seconds += e.period_seconds > 0 ? e.period_seconds : period;
    for (const auto& [k, v] : e.outcomes) w.outcomes[k] += v;
    for (const auto& [k, v] : e.errors) w.errors[k] += v;
    const auto completed = e.outcomes.find("completed");
    const double n = completed == e.outcomes.end() ? 0 : static_cast<double>(completed->second);
    w.executions += static_cast<uint64_t>(n);
    if (e.device_latency) Feed(w.device, *e.device_latency, n);
    if (e.total_latency) Feed(w.total, *e.total_latency, n);
    if (!why.empty()) {
      ++w.unusable_periods;
      ++stats.apps_unusable;
      stats.warnings.push_back("application " + app.tag + ": " + why);
    } else {
      ++stats.apps_used;
    }
  }
  return closed;
}

}  // namespace devtime::agent::monitor
