// A culprit run's pins on the agent (agents/daemon/pins.h).
#include "agents/daemon/pins.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/process.h"

namespace devtime::agent {
namespace {

using ::testing::HasSubstr;

v1::JobSpec Job() {
  v1::JobSpec job;
  job.set_name("nightly");
  job.set_command("/opt/venvs/neuronx-cc-{pin:neuronx-cc}/bin/python run.py");
  (*job.mutable_env())["RUNTIME"] = "/opt/rt-{pin:neuron-runtime}";
  auto* cc = job.add_pins();
  cc->set_key("neuronx-cc");
  cc->set_default_value("current");
  cc->set_source("printf '%s\\n' {good} 2.21.19 {bad}");
  auto* rt = job.add_pins();
  rt->set_key("neuron-runtime");
  rt->set_default_value("current");
  return job;
}

TEST(PinsTest, NormalRunsTakeDefaultsCulpritRunsThePinnedValues) {
  auto normal = ApplyPins(Job(), {});
  ASSERT_TRUE(normal.ok());
  EXPECT_EQ(normal->command(), "/opt/venvs/neuronx-cc-current/bin/python run.py");
  auto pinned = ApplyPins(Job(), {{"neuron-runtime", "2.20"}});
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->env().at("RUNTIME"), "/opt/rt-2.20");
  EXPECT_EQ(pinned->command(), "/opt/venvs/neuronx-cc-current/bin/python run.py");
}

TEST(PinsTest, WhatCannotBePinnedIsAnErrorNamingIt) {
  auto unknown = ApplyPins(Job(), {{"torch-neuronx", "2.1"}});
  EXPECT_THAT(unknown.status().message(), HasSubstr("pins: job nightly cannot pin torch-neuronx"));
  auto unsafe = ApplyPins(Job(), {{"neuronx-cc", "1; rm -rf /"}});
  EXPECT_THAT(unsafe.status().message(), HasSubstr("is not a value neuronx-cc can be pinned to"));
}

TEST(PinsTest, SourcesAreRunAndRecordedInOrder) {
  v1::RunNowRequest request;
  request.set_hunt_tag("r1-1");
  auto* range = request.add_resolve();
  range->set_key("neuronx-cc");
  range->set_good("2.21.18");
  range->set_bad("2.22.4");
  auto values = ResolveSources(Job(), request, devtime::testing::MakeTempDir("pins"),
                               std::chrono::seconds(10));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("devtime.values.neuronx-cc.0"), "2.21.18 2.21.19 2.22.4");
  range->set_key("neuron-runtime");
  auto none = ResolveSources(Job(), request, devtime::testing::MakeTempDir("pins"),
                             std::chrono::seconds(10));
  EXPECT_THAT(none.status().message(), HasSubstr("neuron-runtime has no value source"));
}

}  // namespace
}  // namespace devtime::agent
