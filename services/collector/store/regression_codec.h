// devtime::store — the analyzer's plain regression structs (analyze/regression.h) as the wire
// messages (regressions.proto) that the regressions table's jsonb columns, the RPCs and the
// notifications carry. The one place the two shapes meet.
#pragma once

#include "devtime/v1/regressions.pb.h"
#include "services/collector/analyze/regression.h"

namespace devtime::store {

v1::Attribution ToProto(const analyze::Attribution& attribution);
v1::RegressionSeries ToProto(const analyze::SeriesChange& change);
// A new regression (state suspected) with its summary line (notify::Summary).
v1::Regression ToProto(const analyze::NewRegression& regression);

}  // namespace devtime::store
