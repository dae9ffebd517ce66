#include "tests/bench/fleet/monitor_windows.h"

#include <cmath>
#include <cstdio>

namespace devtime::bench {
namespace {

void Sketch(v1::LatencySketch& s, int buckets, double median_us, int seed) {
  s.set_relative_accuracy(0.005);
  const double log_gamma = std::log(1.005 / 0.995);
  const int center = static_cast<int>(std::ceil(std::log(median_us) / log_gamma));
  s.set_min_index(center - buckets / 2);
  for (int k = 0; k < buckets; ++k) {
    const double x = (k - buckets / 2.0) / (buckets / 6.0);
    s.add_weights(std::floor(1000 * std::exp(-x * x / 2)) + (k + seed) % 3);
  }
  s.set_min_us(median_us / 3);
  s.set_max_us(median_us * 3);
}

}  // namespace

v1::RunSummary BenchWindow(int host, int model, int64_t start_s, int buckets) {
  v1::RunSummary run;
  char id[40];
  std::snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012llx", host, model,
                static_cast<unsigned>(start_s / 3600 % 4096), 0,
                static_cast<unsigned long long>(start_s));
  auto* identity = run.mutable_identity();
  identity->set_run_id(id);
  identity->set_model("bench-model-" + std::to_string(model));
  identity->set_workload("serving");
  identity->set_host("bench-host-" + std::to_string(host));
  identity->set_instance_type("trn1.32xlarge");
  identity->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.mutable_started_at()->set_seconds(start_s);
  run.mutable_finished_at()->set_seconds(start_s + 3600);
  run.set_status(v1::RUN_STATUS_OK);
  run.set_source(v1::RUN_SOURCE_MONITOR);
  (*run.mutable_environment())["neuron-runtime"] = "2.21.0";
  (*run.mutable_environment())["instance_id"] = "i-" + std::to_string(host);
  auto* m = run.mutable_monitor();
  m->mutable_window_start()->set_seconds(start_s);
  m->mutable_window_end()->set_seconds(start_s + 3600);
  m->set_runtime_tag("serve-" + std::to_string(model));
  m->add_neff_names("model-" + std::to_string(model) + ".neff");
  m->set_periods(360);
  m->set_covered_seconds(3600);
  m->set_executions(360'000);
  (*m->mutable_outcomes())["completed"] = 360'000;
  (*m->mutable_errors())["transient"] = static_cast<uint64_t>(host % 3);
  m->set_neuroncore_utilization_pct(55);
  const double median = 5'000 + 1'000 * model;
  Sketch(*m->mutable_device_latency(), buckets, median, host);
  Sketch(*m->mutable_total_latency(), buckets, median * 1.1, host + 1);
  m->set_device_p50_us(median);
  m->set_device_p99_us(median * 1.8);
  m->set_total_p99_us(median * 2);
  return run;
}

}  // namespace devtime::bench
