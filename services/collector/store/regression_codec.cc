#include "services/collector/store/regression_codec.h"

#include "services/collector/notify/payloads.h"
#include "services/collector/store/sql_util.h"

namespace devtime::store {
namespace {

// The before/after/delta triple OpDelta and LayerDelta share.
template <typename Delta, typename Proto>
void SetChange(const Delta& in, Proto* out) {
  out->set_before_us(in.before_us);
  out->set_after_us(in.after_us);
  out->set_delta_us(in.delta_us);
}

}  // namespace

v1::Attribution ToProto(const analyze::Attribution& attribution) {
  v1::Attribution out;
  for (const auto& op : attribution.ops) {
    v1::OpDelta* d = out.add_ops();
    d->set_op(op.op);
    SetChange(op, d);
    d->set_before_calls(op.before_calls);
    d->set_after_calls(op.after_calls);
    d->set_share(op.share);
  }
  for (const auto& layer : attribution.layers) {
    v1::LayerDelta* d = out.add_layers();
    d->set_layer(layer.layer);
    SetChange(layer, d);
  }
  out.set_dominant_layer(attribution.dominant_layer);
  for (const auto& change : attribution.environment) {
    v1::EnvironmentChange* e = out.add_environment();
    e->set_key(change.key);
    e->set_before(change.before);
    e->set_after(change.after);
  }
  return out;
}

v1::RegressionSeries ToProto(const analyze::SeriesChange& change) {
  v1::RegressionSeries out;
  out.set_metric(change.metric);
  out.set_op(change.op);
  out.set_before(change.before);
  out.set_after(change.after);
  out.set_relative_change(change.relative_change);
  out.set_z(change.z);
  out.set_baseline_runs(static_cast<uint32_t>(change.baseline_runs));
  return out;
}

v1::RegressionDrift ToProto(const analyze::DriftFigures& drift) {
  v1::RegressionDrift out;
  out.set_slope_per_30(drift.slope_per_30);
  out.set_slope(drift.slope);
  out.set_start_run_id(drift.start_run_id);
  *out.mutable_start_at() = FromMicros(drift.start_at_us);
  out.set_end_run_id(drift.end_run_id);
  *out.mutable_end_at() = FromMicros(drift.end_at_us);
  out.set_runs(static_cast<uint32_t>(drift.runs));
  out.set_kendall_tau(drift.kendall_tau);
  out.set_p_value(drift.p_value);
  return out;
}

void SetDriftFigures(const analyze::DriftFigures& drift, v1::Regression& r) {
  r.set_before(drift.start_value);
  r.set_after(drift.end_value);
  r.set_relative_change(drift.relative_change);
  r.set_z(drift.z);
  r.set_confidence(drift.confidence);
  *r.mutable_drift() = ToProto(drift);
  analyze::SeriesChange whole = {.metric = r.metric(),
                                 .before = drift.start_value,
                                 .after = drift.end_value,
                                 .relative_change = drift.relative_change,
                                 .z = drift.z,
                                 .baseline_runs = drift.runs};
  if (r.series_size() > 0 && r.series(0).op().empty()) *r.mutable_series(0) = ToProto(whole);
  r.set_summary(collector::notify::Summary(r));
}

v1::Regression ToProto(const analyze::NewRegression& regression) {
  v1::Regression r;
  r.set_state(regression.state);
  r.set_kind(analyze::KindName(regression.kind));
  r.set_severity(regression.severity);
  r.set_model(regression.series.model);
  r.set_workload(regression.series.workload);
  r.set_instance_type(regression.series.instance_type);
  r.set_job(regression.job);
  r.set_host(regression.host);
  r.set_metric(regression.series.metric);
  r.set_last_good_run_id(regression.last_good_run_id);
  r.set_first_bad_run_id(regression.first_bad_run_id);
  r.set_before(regression.before);
  r.set_after(regression.after);
  r.set_relative_change(regression.relative_change);
  r.set_z(regression.z);
  r.set_confidence(regression.confidence);
  for (const auto& change : regression.series_changes) *r.add_series() = ToProto(change);
  *r.mutable_attribution() = ToProto(regression.attribution);
  r.set_confirmation_requested(regression.confirmation_request_id.has_value());
  if (regression.drift) *r.mutable_drift() = ToProto(*regression.drift);
  r.set_summary(collector::notify::Summary(r));
  return r;
}

}  // namespace devtime::store
