#include "agents/trace/raw_trace.h"

namespace devtime::trace {

StringTable::StringTable() {
  strings_.emplace_back();
  ids_.emplace(std::string_view(strings_.back()), 0);
}

uint32_t StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  ids_.emplace(std::string_view(strings_.emplace_back(s)), id);
  return id;
}

}  // namespace devtime::trace
