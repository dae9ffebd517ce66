// LayerName() and DeviceKindName(): the names of the summary's enums, one table each in the
// enum's order.
#include <iterator>
#include <string_view>

#include "agents/trace/model/summary.h"

namespace devtime::trace {
namespace {

// "unknown" for a value outside the enum (a cast, never written by this library).
template <typename Enum, std::size_t N>
std::string_view NameIn(const std::string_view (&names)[N], Enum value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "unknown";
}

}  // namespace

std::string_view LayerName(Layer layer) {
  static constexpr std::string_view kNames[] = {"framework_dispatch", "runtime_scheduling",
                                                "device_execution", "idle"};
  return NameIn(kNames, layer);
}

std::string_view DeviceKindName(DeviceKind kind) {
  static constexpr std::string_view kNames[] = {"cpu", "cuda", "neuron"};
  return NameIn(kNames, kind);
}

}  // namespace devtime::trace
