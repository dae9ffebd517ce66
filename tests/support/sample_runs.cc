#include "tests/support/sample_runs.h"

#include <cstdio>

namespace devtime::testing {

std::string TestRunId(int n) {
  char text[37];
  std::snprintf(text, sizeof text, "00000000-0000-4000-8000-%012x", n);
  return text;
}

v1::RunSummary OkNeuronRun(const std::string& run_id, const RunOrigin& origin,
                           long long started_epoch_seconds, int seconds) {
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(run_id);
  id->set_job(origin.job);
  id->set_model(origin.model);
  id->set_workload(origin.workload);
  id->set_host(origin.host);
  id->set_instance_type(origin.instance_type);
  id->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.mutable_started_at()->set_seconds(started_epoch_seconds);
  run.mutable_finished_at()->set_seconds(started_epoch_seconds + seconds);
  run.set_status(v1::RUN_STATUS_OK);
  return run;
}

v1::RunSummary NaiveRmsNormRun(const std::string& run_id, const std::string& workload,
                               long long started_epoch_seconds) {
  v1::RunSummary run =
      OkNeuronRun(run_id, {"rmsnorm-nightly", "rmsnorm", workload, "trn-test-01", "trn1.2xlarge"},
                  started_epoch_seconds, 60);
  (*run.mutable_environment())["torch"] = "2.9.0";
  (*run.mutable_environment())["neuronx-cc"] = "2.21.0";
  run.mutable_capture()->set_wait_steps(2);
  run.mutable_capture()->set_warmup_steps(1);
  run.mutable_capture()->set_active_steps(3);
  run.mutable_capture()->set_synchronized(true);
  struct Op {
    const char* name;
    int calls;
    double device_us;
  };
  for (Op op : {Op{"aten::mul", 2, 1164.5}, Op{"aten::add", 1, 434.6}, Op{"aten::rsqrt", 1, 415.0},
                Op{"aten::mean", 1, 340.8}}) {
    auto* stat = run.add_ops();
    stat->set_name(op.name);
    stat->set_calls(static_cast<uint64_t>(op.calls) * 3);
    stat->set_self_cpu_us(12.0 * op.calls);
    stat->set_total_cpu_us(12.0 * op.calls);
    stat->set_self_device_us(op.device_us * 3);
    stat->set_total_device_us(op.device_us * 3);
    for (double factor : {0.99, 1.0, 1.01}) stat->add_step_self_device_us(op.device_us * factor);
  }
  for (int step = 0; step < 3; ++step) {
    auto* s = run.add_steps();
    s->set_step(static_cast<uint32_t>(3 + step));
    s->set_device_us(2354.9 * (0.99 + 0.01 * step));
    s->set_cpu_us(60);
  }
  auto* layer = run.add_layers();
  layer->set_layer(v1::LAYER_DEVICE_EXECUTION);
  layer->set_time_us(2354.9 * 3);
  auto* artifact = run.add_artifacts();
  artifact->set_kind("framework_trace");
  artifact->set_uri("file:///var/lib/devtime/runs/" + run_id + "/trace.json");
  artifact->set_size_bytes(123456);
  return run;
}

void FuseRmsNormOps(v1::RunSummary& run) {
  run.clear_ops();
  auto* op = run.add_ops();
  op->set_name("aten::rms_norm");
  op->set_calls(3);
  op->set_self_device_us(403.3 * 3);
  op->set_total_device_us(403.3 * 3);
}

}  // namespace devtime::testing
