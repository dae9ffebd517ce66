// A value source's values in a culprit run's environment (job_spec.h): written by the agent
// (agents/daemon/pins.cc) as entries KEY.N, read back by the collector's hunt in N's order.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devtime/v1/run.pb.h"
#include "proto/wire/job_spec.h"

namespace devtime::wire {
namespace {

TEST(SourceValuesTest, EntriesAreNamedDevtimeValuesKeyN) {
  EXPECT_EQ(SourceValuesEntry("neuronx-cc", 11), "devtime.values.neuronx-cc.11");
}

// A source of 120 compiler builds (40-character ids) fills twelve entries: their values come
// back in the source's order whatever order the map, or the entries' names, give them.
TEST(SourceValuesTest, JoinsEachKeysEntriesInTheirIndexOrder) {
  std::vector<std::string> builds;
  std::map<std::string, std::string> entries;
  for (int n = 0; n < 12; ++n) {
    std::string chunk;
    for (int i = 0; i < 10; ++i) {
      builds.push_back(absl::StrFormat("%040d", n * 10 + i));
      chunk += (chunk.empty() ? "" : " ") + builds.back();
    }
    entries[SourceValuesEntry("neuronx-cc", n)] = chunk;
  }
  entries[SourceValuesEntry("neuron-runtime", 0)] = "2.20 2.21";
  entries["compiler"] = "2.22.4";  // not a source's
  v1::RunSummary run;
  run.mutable_environment()->insert(entries.begin(), entries.end());
  v1::RunSummary parsed;  // as the collector reads it back from the store
  ASSERT_TRUE(parsed.ParseFromString(run.SerializeAsString()));

  auto values = SourceValues(parsed.environment());
  EXPECT_EQ(values.size(), 2u);
  EXPECT_EQ(values["neuronx-cc"], absl::StrJoin(builds, " "));
  EXPECT_EQ(values["neuron-runtime"], "2.20 2.21");
}

}  // namespace
}  // namespace devtime::wire
