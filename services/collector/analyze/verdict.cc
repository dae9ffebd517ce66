#include "services/collector/analyze/verdict.h"

#include <iterator>

namespace devtime::analyze {

std::string VerdictName(Verdict verdict) {
  // In the order of the enumerators.
  static constexpr const char* kNames[] = {
      "none", "suspected", "confirmed", "refuted", "resolved", "insufficient_history", "skipped"};
  static_assert(std::size(kNames) == kAllVerdicts.size());
  return kNames[static_cast<size_t>(verdict)];
}

}  // namespace devtime::analyze
