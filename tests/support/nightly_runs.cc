#include "tests/support/nightly_runs.h"

#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"

namespace devtime::testing {

const std::vector<NightlyOp> kFusedRmsNorm = {{"aten::rms_norm", 1, 403.3}};
const std::vector<NightlyOp> kNaiveRmsNorm = {{"aten::mul", 2, 1164.5},
                                              {"aten::add", 1, 434.6},
                                              {"aten::rsqrt", 1, 415.0},
                                              {"aten::mean", 1, 340.8}};

v1::RunSummary NightlyRmsNormRun(const NightlyRunSpec& spec, std::mt19937& rng) {
  constexpr int kSteps = kNightlySteps;
  v1::RunSummary run;
  auto* id = run.mutable_identity();
  id->set_run_id(absl::StrFormat("00000000-0000-4000-8000-%012d", spec.n));
  id->set_job(spec.job);
  id->set_model("rmsnorm");
  id->set_workload("fused");
  id->set_host(spec.host);
  id->set_instance_type("trn1.2xlarge");
  id->set_device_kind(v1::DEVICE_KIND_NEURON);
  *run.mutable_started_at() = google::protobuf::util::TimeUtil::SecondsToTimestamp(spec.started);
  run.set_status(v1::RUN_STATUS_OK);
  (*run.mutable_environment())["neuronx-cc"] = spec.compiler;
  for (const auto& [key, value] : spec.environment) (*run.mutable_environment())[key] = value;
  run.mutable_capture()->set_active_steps(kSteps);
  run.mutable_capture()->set_synchronized(true);
  std::uniform_real_distribution<double> jitter(1.0 - spec.noise, 1.0 + spec.noise);
  std::vector<double> step_totals(kSteps, 0.0);
  for (const NightlyOp& op : spec.ops) {
    auto* stat = run.add_ops();
    stat->set_name(op.name);
    stat->set_calls(static_cast<uint64_t>(op.calls) * kSteps);
    double total = 0;
    for (int s = 0; s < kSteps; ++s) {
      const double us = op.device_us * spec.scale * jitter(rng);
      stat->add_step_self_device_us(us);
      step_totals[s] += us;
      total += us;
    }
    stat->set_self_device_us(total);
    stat->set_total_device_us(total);
    stat->set_self_cpu_us(10.0 * op.calls * kSteps);
    stat->set_total_cpu_us(10.0 * op.calls * kSteps);
  }
  double device = 0;
  for (int s = 0; s < kSteps; ++s) {
    auto* step = run.add_steps();
    step->set_step(s + 1);
    step->set_device_us(step_totals[s]);
    step->set_cpu_us(12.0);
    device += step_totals[s];
  }
  auto* layer = run.add_layers();
  layer->set_layer(v1::LAYER_DEVICE_EXECUTION);
  layer->set_time_us(device);
  return run;
}

}  // namespace devtime::testing
