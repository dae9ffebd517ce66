#include "services/collector/store/regression_codec.h"

#include "services/collector/analyze/decision.h"
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

// The levels, change and z a regression (NewRegression -> v1::Regression) and its series
// children (SeriesChange -> v1::RegressionSeries) share.
template <typename Change, typename Proto>
void SetLevels(const Change& in, Proto* out) {
  out->set_before(in.before);
  out->set_after(in.after);
  out->set_relative_change(in.relative_change);
  out->set_z(in.z);
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
  SetLevels(change, &out);
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
  const analyze::SeriesChange whole = analyze::ChangeOf(r.metric(), "", drift);
  SetLevels(whole, &r);
  r.set_confidence(drift.confidence);
  *r.mutable_drift() = ToProto(drift);
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
  SetLevels(regression, &r);
  r.set_confidence(regression.confidence);
  for (const auto& change : regression.series_changes) *r.add_series() = ToProto(change);
  *r.mutable_attribution() = ToProto(regression.attribution);
  r.set_confirmation_requested(regression.confirmation_request_id.has_value());
  if (regression.drift) *r.mutable_drift() = ToProto(*regression.drift);
  r.set_summary(collector::notify::Summary(r));
  return r;
}

}  // namespace devtime::store
