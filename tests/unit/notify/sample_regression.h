// A regression as the detector would write it: the demo history's RMSNorm losing its fusion.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "devtime/v1/regressions.pb.h"

namespace devtime::collector::notify {

inline google::protobuf::Timestamp ProtoTime(absl::Time t) {
  google::protobuf::Timestamp out;
  out.set_seconds(absl::ToUnixSeconds(t));
  out.set_nanos(
      static_cast<int32_t>((t - absl::FromUnixSeconds(out.seconds())) / absl::Nanoseconds(1)));
  return out;
}

inline v1::Regression SampleRegression(int64_t id, absl::Time fired_at) {
  v1::Regression r;
  r.set_id(id);
  r.set_state(v1::REGRESSION_STATE_OPEN);
  r.set_severity("critical");
  r.set_model("rmsnorm");
  r.set_workload("fused");
  r.set_instance_type("trn1.2xlarge");
  r.set_job("rmsnorm-fused");
  r.set_host("trn-a");
  r.set_metric("device_us_per_step");
  r.set_last_good_run_id("run-good");
  r.set_first_bad_run_id("run-bad");
  r.set_confirmation_run_id("run-confirm");
  r.set_before(403.3);
  r.set_after(2355.0);
  r.set_relative_change(2355.0 / 403.3 - 1);
  r.set_summary(
      "rmsnorm/fused on trn1.2xlarge: device time per step +483.9 % (403.3 µs -> 2.355 ms)");
  auto* ops = r.mutable_attribution()->mutable_ops();
  auto add_op = [&](const char* name, double before_us, double after_us, double before_calls,
                    double after_calls) {
    auto* op = ops->Add();
    op->set_op(name);
    op->set_before_us(before_us);
    op->set_after_us(after_us);
    op->set_delta_us(after_us - before_us);
    op->set_before_calls(before_calls);
    op->set_after_calls(after_calls);
  };
  add_op("aten::mul", 0, 1164.5, 0, 2);
  add_op("aten::pow", 0, 402.0, 0, 1);
  add_op("aten::rms_norm", 400.0, 0, 1, 0);
  add_op("aten::add", 10.0, 290.25, 1, 3);
  add_op("aten::mean", 0, 101.0, 0, 1);
  add_op("aten::rsqrt", 0, 1.0, 0, 1);
  auto* env = r.mutable_attribution()->add_environment();
  env->set_key("neuronx-cc");
  env->set_before("2.21");
  env->set_after("2.22");
  *r.mutable_created_at() = ProtoTime(fired_at - absl::Minutes(30));
  *r.mutable_fired_at() = ProtoTime(fired_at);
  return r;
}

// `r` moved to resolved (fixed) at `ended_at`.
inline v1::Regression Resolved(v1::Regression r, absl::Time ended_at) {
  r.set_state(v1::REGRESSION_STATE_RESOLVED);
  r.set_resolution(v1::RESOLUTION_FIXED);
  *r.mutable_ended_at() = ProtoTime(ended_at);
  return r;
}

}  // namespace devtime::collector::notify
