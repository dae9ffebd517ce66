#include "agents/trace/io/large_array.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace devtime::trace {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

uintptr_t RoundedUp(uintptr_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

}  // namespace

void (*large_array_observer)(int64_t delta) = nullptr;

void AdviseHugePages(const void* p, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = RoundedUp(at);
  const uintptr_t end = (at + bytes) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void* MapLargeArray(size_t bytes) {
  const size_t size = RoundedUp(bytes);
  // Over-map by one huge page, then trim the unaligned head and tail.
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = RoundedUp(at);
  if (aligned > at) munmap(raw, aligned - at);
  const uintptr_t tail = at + kHugePage - aligned;  // (at + size + kHugePage) - (aligned + size)
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  AdviseHugePages(reinterpret_cast<void*>(aligned), size);
  if (large_array_observer) large_array_observer(static_cast<int64_t>(bytes));
  return reinterpret_cast<void*>(aligned);
}

void UnmapLargeArray(void* p, size_t bytes) {
  munmap(p, RoundedUp(bytes));
  if (large_array_observer) large_array_observer(-static_cast<int64_t>(bytes));
}

}  // namespace devtime::trace
