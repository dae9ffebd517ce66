// devtime::trace io — the limits of the streaming JSON scanner, the same for every reader above
// it (Kineto today). Errors that hit one name it (json_scanner.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace devtime::trace {

inline constexpr int kMaxJsonDepth = 1024;
inline constexpr size_t kMaxEventBytes = size_t{256} << 20;  // 256 MiB
inline constexpr uint64_t kMaxEvents = uint64_t{1} << 32;

}  // namespace devtime::trace
