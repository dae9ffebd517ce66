// Drift detection end to end (issue 13): a devtime-collector on PostgreSQL, nightly RMSNorm
// runs uploaded over gRPC, devtimectl reading the regressions back. A slow creep of the
// device time opens exactly one regression of kind drift, with its slope, and no step
// regressions; the lost fusion (a jump) still opens one step regression.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "absl/strings/str_format.h"
#include "devtime/v1/collector.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"
#include "tests/support/collector_fixture.h"
#include "tests/support/nightly_runs.h"

namespace devtime {
namespace {

using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;

constexpr int64_t kDay = 86400;

using Op = devtime::testing::NightlyOp;
const std::vector<Op>& kFused = devtime::testing::kFusedRmsNorm;
const std::vector<Op>& kNaive = devtime::testing::kNaiveRmsNorm;

// Nightly run `n` of rmsnorm/fused with `ops`, every op's time scaled by `scale` and each
// step's by a uniform +-0.5 % jitter.
v1::RunSummary NightlyRun(int n, int64_t started, const std::vector<Op>& ops,
                          const std::string& compiler, double scale, std::mt19937& rng) {
  return devtime::testing::NightlyRmsNormRun({.n = n,
                                              .started = started,
                                              .ops = ops,
                                              .compiler = compiler,
                                              .host = "trn-drift",
                                              .scale = scale},
                                             rng);
}

class DriftTest : public devtime::testing::CollectorFixture {
 protected:
  DriftTest() : now_(time(nullptr)) {}

  // Night k of the history, k - 100 days from now.
  int64_t Night(int k) const { return now_ - (100 - k) * kDay; }

  int64_t now_;
};

constexpr double kPerRun = 0.003;   // +0.3 % of the first night's level per run
constexpr double kBase = 403.3;     // µs per step of the fused kernel
constexpr double kRunNoise = 0.01;  // night-to-night noise (relative sigma)

TEST_F(DriftTest, ACreepOpensExactlyOneDriftRegressionWithItsSlopeAndNoSteps) {
  std::mt19937 rng(13);
  std::normal_distribution<double> night_noise(0.0, kRunNoise);
  // 20 steady nights, then 60 that creep.
  for (int k = 1; k <= 80; ++k) {
    const double scale = (1.0 + kPerRun * std::max(0, k - 20)) * (1.0 + night_noise(rng));
    UploadAnalysed(NightlyRun(k, Night(k), kFused, "2.21.18", scale, rng));
  }

  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u) << regressions.dump(2) << collector_.Log();
  const auto& r = regressions[0];
  EXPECT_EQ(r["kind"], "drift") << r.dump(2);
  EXPECT_EQ(r["state"], "REGRESSION_STATE_OPEN") << "a drift is confirmed by its own runs";
  // The true slope: kPerRun x kBase µs per step per run; +9 % of the start per 30 runs.
  const double slope = r["drift"]["slope"].get<double>();
  EXPECT_NEAR(slope, kPerRun * kBase, 0.25 * kPerRun * kBase) << r.dump(2);
  const double start_value = r["before"].get<double>();
  const double true_per_30 = 30.0 * kPerRun * kBase / start_value;
  EXPECT_NEAR(r["drift"]["slope_per_30"].get<double>(), true_per_30, 0.25 * true_per_30);
  // Updated by every run while it continues: its newest run is the last night.
  EXPECT_EQ(r["drift"]["end_run_id"], "00000000-0000-4000-8000-000000000080");
  EXPECT_GT(r["drift"]["runs"].get<int>(), 40);
  EXPECT_FALSE(r["drift"]["start_run_id"].get<std::string>().empty());
  EXPECT_GT(r["confidence"].get<double>(), 0.999);
  EXPECT_THAT(r["summary"].get<std::string>(), HasSubstr("%/30 runs since"));

  // devtimectl shows the kind and the rate.
  auto listed = Ctl({"regressions", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("kind"));
  EXPECT_THAT(listed.out, HasSubstr("drift"));
  EXPECT_THAT(listed.out,
              HasSubstr("%/30 runs since " + r["drift"]["start_run_id"].get<std::string>()));
  auto shown = Ctl({"regressions", "show", r["id"].get<std::string>()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr(", drift\n"));
  EXPECT_THAT(shown.out, HasSubstr("drift       +"));
}

TEST_F(DriftTest, TheLostFusionStillOpensOneStepRegressionWithAtenMulOnTop) {
  std::mt19937 rng(3);
  for (int k = 1; k <= 10; ++k)
    UploadAnalysed(NightlyRun(k, Night(k), kFused, "2.21.18", 1.0, rng));
  UploadAnalysed(NightlyRun(11, Night(11), kNaive, "2.22.4", 1.0, rng));
  UploadAnalysed(NightlyRun(12, Night(12), kNaive, "2.22.4", 1.0, rng));

  auto regressions = ListRegressions();
  ASSERT_EQ(regressions.size(), 1u) << regressions.dump(2);
  EXPECT_EQ(regressions[0]["kind"], "step");
  EXPECT_EQ(regressions[0]["state"], "REGRESSION_STATE_OPEN");
  EXPECT_EQ(regressions[0]["first_bad_run_id"], "00000000-0000-4000-8000-000000000011");
  EXPECT_EQ(regressions[0]["attribution"]["ops"][0]["op"], "aten::mul");
}

}  // namespace
}  // namespace devtime
