// The culprit hunt's plan and judgement (analyze/hunt.h), replayed from a v1::Hunt alone.
#include "services/collector/analyze/hunt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

namespace devtime::analyze {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::Hunt NewHunt(std::vector<std::array<std::string, 3>> keys) {
  v1::Hunt hunt;
  hunt.set_state(v1::HUNT_STATE_HUNTING);
  hunt.set_budget(8);
  hunt.set_baseline(403.0);
  hunt.set_current(2345.0);
  hunt.set_sigma(5.0);
  for (const auto& [key, before, after] : keys) {
    auto* change = hunt.add_keys();
    change->set_key(key);
    change->set_before(before);
    change->set_after(after);
  }
  return hunt;
}

// Plans the next run and records it with the level `value` (judged as Judge says).
NextRun Step(v1::Hunt& hunt, double value, const std::vector<std::string>& sources = {}) {
  auto next = Plan(hunt, sources);
  EXPECT_TRUE(std::holds_alternative<NextRun>(next));
  NextRun run = std::get<NextRun>(next);
  auto* added = hunt.add_runs();
  added->mutable_pins()->insert(run.pins.begin(), run.pins.end());
  added->set_purpose(run.purpose);
  auto judged = Judge(hunt, {.value = value, .step_stddev = 10, .steps = 10});
  added->set_value(value);
  added->set_judgement(judged.judgement);
  added->set_z(judged.z);
  hunt.set_runs_spent(hunt.runs_spent() + 1);
  return run;
}

HuntVerdict Verdict(const v1::Hunt& hunt) {
  auto next = Plan(hunt, {});
  EXPECT_TRUE(std::holds_alternative<HuntVerdict>(next));
  return std::holds_alternative<HuntVerdict>(next) ? std::get<HuntVerdict>(next) : HuntVerdict{};
}

TEST(JudgeTest, AtTheBaselineIsFastAtTheCurrentLevelSlowBetweenAmbiguous) {
  v1::Hunt hunt = NewHunt({});
  EXPECT_EQ(Judge(hunt, {.value = 410, .step_stddev = 10, .steps = 10}).judgement, "fast");
  EXPECT_EQ(Judge(hunt, {.value = 2300, .step_stddev = 10, .steps = 10}).judgement, "slow");
  hunt.set_sigma(400);
  EXPECT_EQ(Judge(hunt, {.value = 1300, .step_stddev = 10, .steps = 10}).judgement, "ambiguous");
}

// The hunt tests' CPU workload on a loaded host: baseline 2.0 ms, the first bad run timed on a
// busy minute (37 ms, twice its quiet 15 ms); a culprit run still on the naive kernel at 15 ms
// is at the current level, not back at the baseline: the nearer by ratio.
TEST(JudgeTest, ARunNearerTheCurrentLevelByRatioIsSlowThoughBelowTheArithmeticMidpoint) {
  v1::Hunt hunt = NewHunt({});
  hunt.set_baseline(2000);
  hunt.set_current(37000);
  hunt.set_sigma(200);
  EXPECT_EQ(Judge(hunt, {.value = 15000, .step_stddev = 500, .steps = 12}).judgement, "slow");
  EXPECT_EQ(Judge(hunt, {.value = 5000, .step_stddev = 500, .steps = 12}).judgement, "fast");
}

TEST(PlanTest, TwoKeysEachPinnedBackAloneNameTheOneThatDidIt) {
  v1::Hunt hunt =
      NewHunt({{"neuron-runtime", "2.20", "2.21"}, {"neuronx-cc", "2.21.18", "2.22.4"}});
  NextRun all = Step(hunt, 404);
  EXPECT_EQ(all.pins.size(), 2u);
  NextRun runtime = Step(hunt, 2340);
  EXPECT_EQ(runtime.pins, (std::map<std::string, std::string>{{"neuron-runtime", "2.20"}}));
  Step(hunt, 403.1);
  HuntVerdict verdict = Verdict(hunt);
  EXPECT_EQ(verdict.state, v1::HUNT_STATE_CULPRIT_FOUND);
  EXPECT_EQ(verdict.culprit_key, "neuronx-cc");
  EXPECT_THAT(verdict.verdict, StartsWith("culprit: neuronx-cc 2.21.18 → 2.22.4 — pinned back "
                                          "403.1 µs (baseline 403.0 µs), current 2.345 ms; "
                                          "confidence"));
  EXPECT_THAT(verdict.verdict, HasSubstr("not neuron-runtime 2.20 → 2.21"));
}

TEST(PlanTest, EverythingPinnedBackStillSlowIsNotTheEnvironment) {
  v1::Hunt hunt = NewHunt({{"neuronx-cc", "1", "2"}});
  Step(hunt, 2350);
  HuntVerdict verdict = Verdict(hunt);
  EXPECT_EQ(verdict.state, v1::HUNT_STATE_NO_CULPRIT);
  EXPECT_THAT(verdict.verdict, StartsWith("not the environment: everything pinned back"));
}

TEST(PlanTest, BisectsSixteenValuesInFourRunsAfterTheFirst) {
  v1::Hunt hunt = NewHunt({{"cc", "v01", "v16"}});
  std::string values;
  for (int i = 1; i <= 16; ++i) values += (i < 10 ? "v0" : "v") + std::to_string(i) + " ";
  (*hunt.mutable_values())["cc"] = values;
  NextRun first = Step(hunt, 404, {"cc"});
  ASSERT_EQ(first.resolve.size(), 1u);
  for (int i = 0; i < 4; ++i) {
    auto next = Plan(hunt, {"cc"});
    ASSERT_TRUE(std::holds_alternative<NextRun>(next)) << i;
    const std::string v = std::get<NextRun>(next).pins.at("cc");
    Step(hunt, v >= "v10" ? 2340 : 404, {"cc"});
  }
  HuntVerdict verdict = Verdict(hunt);
  EXPECT_EQ(verdict.first_bad_value, "v10");
  EXPECT_EQ(verdict.last_good_value, "v09");
  EXPECT_EQ(hunt.runs_spent(), 5u);
}

TEST(PlanTest, SplitsManyKeysInHalves) {
  v1::Hunt hunt = NewHunt({{"a", "1", "2"}, {"b", "1", "2"}, {"c", "1", "2"}, {"d", "1", "2"}});
  Step(hunt, 404);                  // all back: fast
  NextRun half = Step(hunt, 2340);  // a, b back: slow
  EXPECT_EQ(half.pins.size(), 2u);
  NextRun c = Step(hunt, 404);  // c back: fast
  EXPECT_EQ(c.pins.count("c"), 1u);
  EXPECT_EQ(Verdict(hunt).culprit_key, "c");
}

TEST(PlanTest, BudgetAndRepeatedAmbiguityAreInconclusive) {
  v1::Hunt hunt = NewHunt({{"a", "1", "2"}, {"b", "1", "2"}});
  hunt.set_budget(1);
  Step(hunt, 404);
  EXPECT_THAT(Verdict(hunt).verdict, StartsWith("inconclusive (the budget of 1"));
  v1::Hunt twice = NewHunt({{"a", "1", "2"}});
  twice.set_sigma(400);  // a noisy baseline: 1,374 µs is near neither level
  Step(twice, 1374);
  Step(twice, 1374);
  EXPECT_THAT(Verdict(twice).verdict, HasSubstr("twice, between the baseline"));
}

}  // namespace
}  // namespace devtime::analyze
