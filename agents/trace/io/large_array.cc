#include "agents/trace/io/large_array.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace devtime::trace {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

size_t Rounded(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

}  // namespace

void (*large_array_observer)(int64_t delta) = nullptr;

void* MapLargeArray(size_t bytes) {
  const size_t size = Rounded(bytes);
  // Over-map by one huge page, then trim the unaligned head and tail.
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > at) munmap(raw, aligned - at);
  const uintptr_t tail = at + size + kHugePage - (aligned + size);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  if (large_array_observer) large_array_observer(static_cast<int64_t>(bytes));
  return reinterpret_cast<void*>(aligned);
}

void UnmapLargeArray(void* p, size_t bytes) {
  munmap(p, Rounded(bytes));
  if (large_array_observer) large_array_observer(-static_cast<int64_t>(bytes));
}

}  // namespace devtime::trace
