// Runs for the report tests, built like the collector returns them from GetRun, and the
// report rendered as `devtimectl report` does: collector messages -> ToReportModel -> page.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "devtime/v1/regressions.pb.h"
#include "devtime/v1/run.pb.h"
#include "services/ctl/report.h"
#include "services/ctl/report_html.h"

namespace devtime::ctl {

inline std::string RenderHtml(const ModelReport& report) {
  return RenderReportHtml(ToReportModel(report));
}
inline std::string RenderText(const ModelReport& report) {
  return RenderReportText(ToReportModel(report));
}

// A Neuron run of `steps` steps in which each op runs once per step for the given µs, and
// the framework dispatch and device execution layers take the given µs per step.
inline v1::RunSummary StepRun(const std::string& run_id, long long started,
                              const std::vector<std::pair<std::string, double>>& ops, int steps,
                              double dispatch_us, double device_us) {
  v1::RunSummary run;
  run.mutable_identity()->set_run_id(run_id);
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.mutable_started_at()->set_seconds(started);
  double total = 0;
  for (const auto& [name, us] : ops) {
    auto* op = run.add_ops();
    op->set_name(name);
    op->set_calls(static_cast<uint64_t>(steps));
    op->set_self_device_us(us * steps);
    total += us;
  }
  for (int step = 0; step < steps; ++step) {
    auto* s = run.add_steps();
    s->set_step(static_cast<uint32_t>(step));
    s->set_device_us(total);
  }
  auto* dispatch = run.add_layers();
  dispatch->set_layer(v1::LAYER_FRAMEWORK_DISPATCH);
  dispatch->set_time_us(dispatch_us * steps);
  auto* device = run.add_layers();
  device->set_layer(v1::LAYER_DEVICE_EXECUTION);
  device->set_time_us(device_us * steps);
  return run;
}

// Gives the run's steps these device times (one step each), keeping its operators.
inline void SetStepTimes(v1::RunSummary& run, const std::vector<double>& device_us) {
  run.clear_steps();
  for (std::size_t i = 0; i < device_us.size(); ++i) {
    auto* step = run.add_steps();
    step->set_step(static_cast<uint32_t>(i));
    step->set_device_us(device_us[i]);
  }
}

// A critical regression of model/workload on trn1.2xlarge, as ListRegressions returns it: its
// attribution blames aten::mul (+1164.5 µs per step) and a neuronx-cc change.
struct RegressionSample {
  int id = 1;
  v1::RegressionState state = v1::REGRESSION_STATE_OPEN;
  std::string model, workload, last_good_run_id, first_bad_run_id;
  long long first_bad_at = 0;  // seconds since the epoch
  double relative_change = 0;
  std::string summary;
  std::string compiler_before, compiler_after;  // neuronx-cc versions
};

inline v1::Regression MakeRegression(const RegressionSample& sample) {
  v1::Regression r;
  r.set_id(sample.id);
  r.set_state(sample.state);
  r.set_severity("critical");
  r.set_model(sample.model);
  r.set_workload(sample.workload);
  r.set_instance_type("trn1.2xlarge");
  r.set_last_good_run_id(sample.last_good_run_id);
  r.set_first_bad_run_id(sample.first_bad_run_id);
  r.mutable_first_bad_at()->set_seconds(sample.first_bad_at);
  r.set_relative_change(sample.relative_change);
  r.set_summary(sample.summary);
  auto* op = r.mutable_attribution()->add_ops();
  op->set_op("aten::mul");
  op->set_delta_us(1164.5);
  auto* env = r.mutable_attribution()->add_environment();
  env->set_key("neuronx-cc");
  env->set_before(sample.compiler_before);
  env->set_after(sample.compiler_after);
  return r;
}

}  // namespace devtime::ctl
