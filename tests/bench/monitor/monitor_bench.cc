// monitor_bench (issue 24): the agent's monitor path for 64 applications x 10 s periods —
// parse, fold, sketch, window runs validated and spooled, the checkpoint — as CPU per hour of
// stream (target <= 2 % of one core) and the memory it holds (target <= 50 MB), against the
// floor in the same run: parsing the same lines with nlohmann::json and nothing else.
//
//   build/bin/monitor_bench [--apps 64] [--period 10] [--hours 6]
//
// The lines of one hour are generated first (not measured) and replayed `hours` times; the
// stream's own time advances, so every hour closes 64 windows that go into a real spool.
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "agents/daemon/files.h"
#include "agents/daemon/spool.h"
#include "agents/monitor/monitor_runner.h"
#include "nlohmann/json.hpp"
#include "proto/wire/validation.h"

namespace {

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double RssMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// One report of `apps` applications (the fields of perfetto-neuron-monitor.md B6.1-B6.3).
std::string Line(int apps, int period, int i) {
  nlohmann::json runtimes = nlohmann::json::array();
  for (int a = 0; a < apps; ++a) {
    const double m = 0.004 * (1 + 0.1 * std::sin(i / 30.0 + a));
    auto latency = [&](double f) {
      return nlohmann::json{{"p0", m * f * 0.4},  {"p1", m * f * 0.5}, {"p100", m * f * 3},
                            {"p25", m * f * 0.8}, {"p50", m * f},      {"p75", m * f * 1.2},
                            {"p99", m * f * 2}};
    };
    nlohmann::json cores = nlohmann::json::object();
    for (int c = 0; c < 2; ++c) {
      cores[std::to_string(2 * a + c)] = {{"neuroncore_utilization", 40.0 + c}, {"flops", 1000}};
    }
    runtimes.push_back({{"pid", 1000 + a},
                        {"neuron_runtime_tag", "app-" + std::to_string(a)},
                        {"error", ""},
                        {"report",
                         {{"execution_stats",
                           {{"period", static_cast<double>(period)},
                            {"error", ""},
                            {"error_summary",
                             {{"generic", 0},
                              {"numerical", 0},
                              {"transient", 0},
                              {"model", 0},
                              {"runtime", 0},
                              {"hardware", 0}}},
                            {"execution_summary",
                             {{"completed", 500},
                              {"completed_with_err", 0},
                              {"completed_with_num_err", 0},
                              {"timed_out", 0},
                              {"incorrect_input", 0},
                              {"failed_to_queue", 0}}},
                            {"latency_stats",
                             {{"total_latency", latency(1.1)}, {"device_latency", latency(1.0)}}}}},
                          {"neuroncore_counters",
                           {{"period", static_cast<double>(period)},
                            {"error", ""},
                            {"neuroncores_in_use", cores}}},
                          {"memory_used",
                           {{"period", static_cast<double>(period)},
                            {"error", ""},
                            {"loaded_models",
                             {{{"name", "model-" + std::to_string(a) + ".neff"},
                               {"uuid", "ab"},
                               {"model_id", a}}}}}}}}});
  }
  return nlohmann::json{{"neuron_runtime_data", runtimes},
                        {"instance_info", {{"instance_type", "trn1.32xlarge"}, {"error", ""}}},
                        {"neuron_hardware_info", {{"neuron_device_count", 16}}}}
      .dump();
}

}  // namespace

int main(int argc, char** argv) {
  int apps = 64, period = 10, hours = 6;
  CLI::App app{"monitor_bench: the agent's neuron-monitor path, CPU and memory"};
  app.add_option("--apps", apps, "applications per report")->capture_default_str();
  app.add_option("--period", period, "seconds per report")->capture_default_str();
  app.add_option("--hours", hours, "hours of stream replayed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> lines;
  for (int i = 0; i < 3600 / period; ++i) lines.push_back(Line(apps, period, i));
  std::size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();
  std::printf("monitor_bench: %d apps, %d s periods, %zu lines/hour of %.1f KiB each, %d hours\n",
              apps, period, lines.size(),
              static_cast<double>(bytes) / static_cast<double>(lines.size()) / 1024, hours);

  // The floor: parsing each line, nothing else.
  const double parse_start = CpuSeconds();
  std::size_t keys = 0;
  for (int h = 0; h < hours; ++h) {
    for (const auto& l : lines) keys += nlohmann::json::parse(l).size();
  }
  const double parse_cpu = CpuSeconds() - parse_start;

  char dir_template[] = "/tmp/monitor-bench-XXXXXX";
  const std::filesystem::path dir = mkdtemp(dir_template);
  std::filesystem::create_directories(dir / "state" / "monitor");
  auto spool = devtime::agent::Spool::Open(dir / "spool", 1ull << 32);
  if (!spool.ok()) return 1;
  devtime::agent::monitor::MonitorConfig config;
  config.enabled = true;
  config.period_seconds = period;
  config.apps.push_back({.tag_regex = "app-.*", .model = "bench", .workload = "serving"});
  config.apps.back().regex = std::regex(config.apps.back().tag_regex);
  config.replay_start = 1'764'547'200;
  long long windows = 0;
  devtime::agent::monitor::RunnerHooks hooks;
  hooks.deliver = [&](const devtime::v1::RunSummary& run) {
    if (auto s = devtime::wire::ValidateRun(run); !s.ok()) return s;
    ++windows;
    return (*spool)->Put(run);
  };
  hooks.log = [](const std::string&) {};
  hooks.write_file = [](const std::filesystem::path& p, const std::string& b) {
    return devtime::agent::ReplaceFileDurably(p, b);
  };
  const double rss_before = RssMiB();
  const double start = CpuSeconds();
  {
    devtime::agent::monitor::MonitorRunner runner(config, {.host = "bench"}, dir / "state", hooks);
    for (int h = 0; h < hours; ++h) {
      for (const auto& l : lines) runner.HandleLine(l);
    }
    const double cpu = CpuSeconds() - start;
    const double rss = RssMiB() - rss_before;
    const double stream_seconds = 3600.0 * hours;
    std::printf("  %-44s %10.3f s\n", "monitor path CPU", cpu);
    std::printf("  %-44s %10.3f %% of a core (target <= 2)\n", "  per second of stream",
                100 * cpu / stream_seconds);
    std::printf("  %-44s %10.1f MiB (target <= 50)\n", "  memory held (RSS growth)", rss);
    std::printf("  %-44s %10lld\n", "  windows spooled", windows);
    std::printf("  %-44s %10.3f s (%zu keys)\n", "baseline: json::parse alone, CPU", parse_cpu,
                keys);
    std::printf("  %-44s %10.2f x\n", "monitor path / parse alone", cpu / parse_cpu);
    std::filesystem::remove_all(dir);
    return windows == static_cast<long long>(apps) * (hours - 1) ? 0 : 1;
  }
}
