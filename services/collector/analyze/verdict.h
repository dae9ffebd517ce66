// devtime::analyze — what one analysis of a stored run concluded (metrics and logs).
#pragma once

#include <array>
#include <string>

namespace devtime::analyze {

enum class Verdict {
  kNone,                 // judged: nothing to report (or a live drift's figures updated)
  kSuspected,            // a new regression was opened (a step: suspected; a drift: open)
  kConfirmed,            // the live suspected regression was confirmed (-> open)
  kRefuted,              // the live suspected regression was not reproduced (-> invalid)
  kResolved,             // back at its baseline, or a drift flat again (-> resolved, fixed)
  kInsufficientHistory,  // too few runs before it to judge
  kSkipped,              // not OK, not the newest point of its series, or already analysed
};

inline constexpr std::array kAllVerdicts = {
    Verdict::kNone,     Verdict::kSuspected,           Verdict::kConfirmed, Verdict::kRefuted,
    Verdict::kResolved, Verdict::kInsufficientHistory, Verdict::kSkipped};

// "none", "suspected", "confirmed", "refuted", "resolved", "insufficient_history", "skipped":
// the devtime_detection_runs_total{verdict} label values.
std::string VerdictName(Verdict verdict);

}  // namespace devtime::analyze
