#include "tests/bench/ingest/wide_run.h"

#include <random>

namespace devtime::bench {

v1::RunSummary WideRun(const std::string& run_id, const std::string& workload,
                       long long started_epoch_seconds, const WideRunShape& shape) {
  std::mt19937 rng(shape.seed);
  std::uniform_real_distribution<double> jitter(0.99, 1.01);
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(run_id);
  id->set_job("wide-nightly");
  id->set_model("wide");
  id->set_workload(workload);
  id->set_host("trn-bench-01");
  id->set_instance_type("trn1.32xlarge");
  id->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.mutable_started_at()->set_seconds(started_epoch_seconds);
  run.mutable_finished_at()->set_seconds(started_epoch_seconds + 600);
  run.set_status(v1::RUN_STATUS_OK);
  (*run.mutable_environment())["neuronx-cc"] = "2.21.18";
  run.mutable_capture()->set_active_steps(static_cast<uint32_t>(shape.steps));
  run.mutable_capture()->set_synchronized(true);
  std::vector<double> step_device(static_cast<size_t>(shape.steps), 0.0);
  double device_total = 0;
  for (int i = 0; i < shape.ops; ++i) {
    const double level = shape.scale * (5.0 + 1000.0 / (1 + i));  // a long tail of small ops
    auto* op = run.add_ops();
    op->set_name("op/" + std::to_string(i));
    op->set_calls(static_cast<uint64_t>(shape.steps) * (1 + i % 4));
    double self = 0;
    for (int s = 0; s < shape.steps; ++s) {
      double sample = level * jitter(rng);
      op->add_step_self_device_us(sample);
      step_device[static_cast<size_t>(s)] += sample;
      self += sample;
    }
    op->set_self_device_us(self);
    op->set_total_device_us(self * 1.1);
    op->set_self_cpu_us(3.0 * shape.steps);
    op->set_total_cpu_us(4.0 * shape.steps);
    device_total += self;
  }
  for (int s = 0; s < shape.steps; ++s) {
    auto* step = run.add_steps();
    step->set_step(static_cast<uint32_t>(s));
    step->set_device_us(step_device[static_cast<size_t>(s)]);
    step->set_cpu_us(2000.0);
  }
  auto* layer = run.add_layers();
  layer->set_layer(v1::LAYER_DEVICE_EXECUTION);
  layer->set_time_us(device_total);
  return run;
}

}  // namespace devtime::bench
