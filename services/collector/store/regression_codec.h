// devtime::store — the analyzer's plain regression structs (analyze/regression.h) as the wire
// messages (regressions.proto) that the regressions table's jsonb columns, the RPCs and the
// notifications carry. The one place the two shapes meet.
#pragma once

#include "devtime/v1/regressions.pb.h"
#include "services/collector/analyze/regression.h"

namespace devtime::store {

v1::Attribution ToProto(const analyze::Attribution& attribution);
v1::RegressionSeries ToProto(const analyze::SeriesChange& change);
v1::RegressionDrift ToProto(const analyze::DriftFigures& drift);
// A drift regression `regression` with the figures of `drift`: its levels, change, z,
// confidence, whole-run child, drift message and summary (severity and ids stay).
void SetDriftFigures(const analyze::DriftFigures& drift, v1::Regression& regression);
// A new regression (its kind and state) with its summary line (notify::Summary).
v1::Regression ToProto(const analyze::NewRegression& regression);

}  // namespace devtime::store
