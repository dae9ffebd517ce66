#include "services/collector/store/series.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "proto/wire/change.h"
#include "proto/wire/names.h"

namespace devtime::store {
namespace {

// The run's steps are buckets of several steps (run.proto's StepTotal.steps).
bool IsBucketed(const v1::RunSummary& run) { return wire::StepsCovered(run) > run.steps_size(); }

}  // namespace

bool UsesCpuTime(const v1::RunSummary& run) {
  return run.identity().device_kind() == v1::DEVICE_KIND_CPU;
}

std::string MetricFor(v1::DeviceKind kind) {
  return kind == v1::DEVICE_KIND_CPU ? kCpuMetric : kDeviceMetric;
}

std::string MetricOf(const v1::RunSummary& run) { return MetricFor(run.identity().device_kind()); }

int StepDivisor(const v1::RunSummary& run) {
  // The steps covered: a bucketed run's entries are fewer than its steps (run.proto).
  if (run.steps_size() > 0) return static_cast<int>(wire::StepsCovered(run));
  if (run.capture().active_steps() > 0) return static_cast<int>(run.capture().active_steps());
  return 1;
}

SeriesValue RunValue(const v1::RunSummary& run) {
  const double mean = wire::TimePerStep(run);  // the one definition (proto/wire/change.h)
  if (run.steps_size() < 2) return {mean, std::nullopt};
  // The noise of one step, buckets weighed by the steps they cover (wire::StepSampleOf).
  return {mean, wire::StepSampleOf(run).stddev};
}

SeriesValue OpPoint(const v1::RunSummary& run, const v1::OpStat& op) {
  const auto& samples = op.step_self_device_us();
  if (samples.empty()) {
    return {(UsesCpuTime(run) ? op.self_cpu_us() : op.self_device_us()) / StepDivisor(run),
            std::nullopt};
  }
  if (IsBucketed(run)) {  // sample i is the mean over bucket i's steps: weighed by them
    const wire::StepSample sample = wire::WeightedStepSample(run, samples);
    if (sample.entries < 2) return {sample.mean, std::nullopt};
    return {sample.mean, sample.stddev};
  }
  // PostgreSQL's float8_accum, float8_avg and float8_stddev_samp, in their order.
  double n = 0, sx = 0, sxx = 0;
  for (double x : samples) {
    const double previous_n = n;
    n += 1.0;
    sx += x;
    if (previous_n > 0.0) {
      const double tmp = x * n - sx;
      sxx += tmp * tmp / (n * previous_n);
    } else {
      sxx = 0.0;
    }
  }
  if (n <= 1.0) return {sx / n, std::nullopt};
  return {sx / n, std::sqrt(sxx / (n - 1.0))};
}

analyze::RunFigures FiguresOf(const v1::RunSummary& run, double total_us) {
  const bool cpu = UsesCpuTime(run);
  const double steps = StepDivisor(run);
  analyze::RunFigures figures;
  figures.total_us = total_us;
  for (const auto& op : run.ops()) {
    const auto& samples = op.step_self_device_us();
    figures.op_us[op.name()] =
        samples.empty()   ? (cpu ? op.self_cpu_us() : op.self_device_us()) / steps
        : IsBucketed(run) ? wire::WeightedStepSample(run, samples).mean
                          : std::accumulate(samples.begin(), samples.end(), 0.0) /
                                static_cast<double>(samples.size());
    figures.op_calls[op.name()] = static_cast<double>(op.calls()) / steps;
  }
  for (const auto& layer : run.layers()) {
    figures.layer_us[wire::LayerName(layer.layer())] = layer.time_us() / steps;
  }
  for (const auto& [key, value] : run.environment()) figures.environment[key] = value;
  return figures;
}

}  // namespace devtime::store
