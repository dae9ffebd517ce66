// Unaligned word loads for the readers' fast paths, which compare and scan 4 or 8 bytes at a
// time instead of one (internal).
#pragma once

#include <cstring>

namespace devtime::trace {

// The sizeof(T) bytes at `p` as a T, in host byte order; `p` needs no alignment (memcpy of a
// constant size compiles to one load).
template <typename T>
inline T LoadWord(const char* p) {
  T w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace devtime::trace
