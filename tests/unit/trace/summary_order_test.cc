// The summarizer's shortcuts for traces that come in order (issue 23, fourth pass): events
// mostly sorted per thread are sorted by moving only the late ones, the step of each op is
// found by a cursor that moves forward, and per-thread counts come from RawEvents' lanes. Each
// must give what the plain definition gives on input in any order.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "agents/trace/kineto/json_trace_reader.h"
#include "agents/trace/summary/summarizer.h"
#include "gtest/gtest.h"
#include "tests/unit/trace/test_util.h"

namespace devtime::trace::testing {
namespace {

// One "X" event, integer µs.
struct Ev {
  std::string cat, name;
  int tid;
  int64_t ts, dur;
  int64_t correlation = -1, external_id = -1;
};

std::string Json(const std::vector<Ev>& events) {
  std::string out = R"({"traceEvents": [)";
  for (size_t i = 0; i < events.size(); ++i) {
    const Ev& e = events[i];
    std::string args;
    if (e.external_id >= 0) args = absl::StrFormat(R"("External id": %d)", e.external_id);
    if (e.correlation >= 0) {
      args += absl::StrFormat(R"(%s"correlation": %d)", args.empty() ? "" : ", ", e.correlation);
    }
    out += absl::StrFormat(
        R"(%s{"ph": "X", "cat": "%s", "name": "%s", "pid": 1, "tid": %d, "ts": %d, "dur": %d, "args": {%s}})",
        i == 0 ? "" : ",\n", e.cat, e.name, e.tid, e.ts, e.dur, args);
  }
  return out + "]}";
}

TraceSummary SummarizeJson(const std::string& json) {
  absl::StatusOr<RawTrace> t = ParseTraceJson(json.data(), json.size(), "in");
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return TraceSummary();
  return SummarizeRawTrace(std::move(*t), SummarizeOptions());
}

// A random CUDA-like trace: on thread 1, `steps` ProfilerStep windows with gaps between them,
// each holding ops that launch kernels; on threads 2 and 3, leaf ops at random times (inside
// steps, between them, at a step's exact start), some launching kernels too. Every op on a
// thread ends before the next starts, so its self CPU is its duration.
std::vector<Ev> RandomTrace(uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<Ev> out;
  int64_t correlation = 1, external = 1;
  auto launch = [&](int tid, int64_t ts, int64_t op_id) {
    out.push_back({"cuda_runtime", "cudaLaunchKernel", tid, ts, 1, correlation, op_id});
    out.push_back({"kernel", "k" + std::to_string(uniform(0, 3)), 7, ts + uniform(1, 50),
                   uniform(1, 20), correlation, op_id});
    ++correlation;
  };
  int64_t t = 0;
  for (int s = 0; s < steps; ++s) {
    t += uniform(0, 30);  // between steps (0: back to back)
    const int64_t start = t;
    t += 1;
    for (int64_t k = uniform(1, 4); k > 0; --k) {
      const int64_t id = external++;
      out.push_back({"cpu_op", "aten::op" + std::to_string(uniform(0, 5)), 1, t, 10, -1, id});
      launch(1, t + 2, id);
      t += 10 + uniform(0, 5);
    }
    out.push_back({"user_annotation", "ProfilerStep#" + std::to_string(s), 1, start, t - start});
  }
  for (int tid = 2; tid <= 3; ++tid) {
    for (int64_t u = 0; u < t;) {
      const int64_t id = external++;
      const int64_t dur = uniform(1, 15);
      out.push_back({"cpu_op", "aten::bwd" + std::to_string(uniform(0, 3)), tid, u, dur, -1, id});
      if (uniform(0, 1) == 1 && dur > 2) launch(tid, u + 1, id);
      u += dur + uniform(0, 20);
    }
  }
  return out;
}

// The step windows as the summary defines them, by a plain scan: the last window starting at
// or before `ts`, if `ts` lies inside it (or is its start).
int FindStep(const std::vector<std::pair<int64_t, int64_t>>& windows, int64_t ts) {
  int found = -1;
  for (size_t w = 0; w < windows.size(); ++w) {
    if (windows[w].first <= ts) found = static_cast<int>(w);
  }
  if (found < 0) return -1;
  const auto [start, end] = windows[static_cast<size_t>(found)];
  return ts < end || ts == start ? found : -1;
}

TEST(SummaryOrder, PerStepCpuMatchesAPlainScanOfTheWindows) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<Ev> events = RandomTrace(seed, 12);
    std::vector<std::pair<int64_t, int64_t>> windows;
    for (const Ev& e : events) {
      if (e.name.starts_with("ProfilerStep#")) windows.emplace_back(e.ts, e.ts + e.dur);
    }
    std::sort(windows.begin(), windows.end());
    // Self CPU per step, by the definition: a step window's own self time is its duration
    // less its children's (the thread-1 ops and launches inside it).
    std::vector<int64_t> want(windows.size(), 0);
    for (const Ev& e : events) {
      if (e.cat == "kernel") continue;
      const int s = FindStep(windows, e.ts);
      if (s < 0) continue;
      int64_t self = e.dur;
      if (e.name.starts_with("ProfilerStep#")) {
        for (const Ev& c : events) {
          if (c.tid == 1 && c.cat == "cpu_op" && c.ts >= e.ts && c.ts < e.ts + e.dur) {
            self -= c.dur;
          }
        }
      } else if (e.cat == "cpu_op") {
        for (const Ev& c : events) {
          if (c.cat == "cuda_runtime" && c.tid == e.tid && c.ts > e.ts && c.ts < e.ts + e.dur) {
            self -= c.dur;
          }
        }
      }
      want[static_cast<size_t>(s)] += self;
    }
    const TraceSummary s = SummarizeJson(Json(events));
    ASSERT_EQ(s.steps.size(), windows.size()) << "seed " << seed;
    for (size_t k = 0; k < windows.size(); ++k) {
      EXPECT_DOUBLE_EQ(s.steps[k].cpu_us, static_cast<double>(want[k]))
          << "seed " << seed << " step " << k;
    }
  }
}

// Everything a summary says about its ops, steps and layers, for comparing two summaries.
using Figures = std::tuple<std::vector<std::tuple<std::string, uint64_t, double, double, double,
                                                  double, std::vector<double>>>,
                           std::vector<std::tuple<uint32_t, double, double>>,
                           std::vector<std::pair<Layer, double>>, double, double>;

Figures FiguresOf(const TraceSummary& s) {
  Figures f;
  for (const OpStats& o : s.ops) {
    std::vector<double> steps;
    for (size_t k = 0; k < s.steps.size(); ++k) steps.push_back(o.step_self_device_us[k]);
    std::get<0>(f).emplace_back(o.name, o.calls, o.self_cpu_us, o.total_cpu_us, o.self_device_us,
                                o.total_device_us, steps);
  }
  for (const StepStats& st : s.steps) std::get<1>(f).emplace_back(st.step, st.cpu_us, st.device_us);
  for (const auto& l : s.layers) std::get<2>(f).emplace_back(l.layer, l.time_us);
  std::get<3>(f) = s.device_total_us;
  std::get<4>(f) = s.unattributed_device_us;
  return f;
}

TEST(SummaryOrder, ShuffledEventsGiveTheSameSummaryAsSortedOnes) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<Ev> events = RandomTrace(seed, 8);
    // In time order per thread (ties: the longer range first), as Kineto writes most of them.
    std::vector<Ev> sorted = events;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Ev& a, const Ev& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<Ev> shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(seed));
    const TraceSummary a = SummarizeJson(Json(sorted));
    const TraceSummary b = SummarizeJson(Json(shuffled));
    ASSERT_FALSE(a.ops.empty());
    EXPECT_FALSE(a.invalid_reason) << *a.invalid_reason;
    EXPECT_TRUE(FiguresOf(a) == FiguresOf(b)) << "seed " << seed;
    EXPECT_TRUE(FiguresOf(SummarizeJson(Json(events))) == FiguresOf(a)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace devtime::trace::testing
