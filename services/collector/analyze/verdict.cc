#include "services/collector/analyze/verdict.h"

namespace devtime::analyze {

std::string VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kNone:
      return "none";
    case Verdict::kSuspected:
      return "suspected";
    case Verdict::kConfirmed:
      return "confirmed";
    case Verdict::kRefuted:
      return "refuted";
    case Verdict::kResolved:
      return "resolved";
    case Verdict::kInsufficientHistory:
      return "insufficient_history";
    case Verdict::kSkipped:
      return "skipped";
  }
  return "none";  // unreachable: every enumerator is handled above
}

}  // namespace devtime::analyze
