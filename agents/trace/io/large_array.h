// devtime::trace internals — an allocator for the per-event arrays of a summary (positions of
// host and device events, (owner, event) pairs, sort buffers: megabytes each on a large trace).
//
// Why: on the VMs devtime is measured on, the first write to a fresh 4 KiB page costs ~15 us (a
// fault through the hypervisor; `pf` microbenchmark: 240 ms per 64 MiB), and a summary of a
// 256 MB trace took ~2,700 of them, ~17 % of its CPU time (perf). A 2 MiB transparent huge page
// costs ~0.25 us per 4 KiB. Arrays of kLargeArrayBytes or more are therefore mapped on their
// own, 2 MiB-aligned and a whole number of 2 MiB pages long, with MADV_HUGEPAGE (the kernel
// honours it where its THP setting is "madvise" or "always"); smaller ones come from operator
// new as before. The rounding costs at most 2 MiB per large array, resident only once touched
// (and 64 faults of 4 KiB, a 256 KiB array's, cost ~7 times one huge page's clearing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace devtime::trace {

inline constexpr size_t kLargeArrayBytes = size_t{256} << 10;

// Asks for transparent huge pages on the whole 2 MiB pages of [p, p + bytes) (where the system
// has them on "madvise" or "always"): for an array allocated elsewhere (RawEvents' rows, a
// std::vector the reader reserves), at the cost of at most one partly used 2 MiB page.
void AdviseHugePages(const void* p, size_t bytes);

// `bytes` (>= kLargeArrayBytes) mapped as above; throws std::bad_alloc when mmap fails.
void* MapLargeArray(size_t bytes);
void UnmapLargeArray(void* p, size_t bytes);

// Tests that count the bytes a summary asks for (summary_memory_test.cc) see the large arrays
// through this hook, which bypass operator new: called with +bytes when one is mapped and
// -bytes when it is unmapped (the bytes asked for; the mapping rounds them up to whole 2 MiB
// pages, at most 2 MiB more per array, not per event). nullptr: none.
extern void (*large_array_observer)(int64_t delta);

template <typename T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() = default;
  template <typename U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) {
    if (n * sizeof(T) < kLargeArrayBytes) return std::allocator<T>().allocate(n);
    return static_cast<T*>(MapLargeArray(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kLargeArrayBytes) return std::allocator<T>().deallocate(p, n);
    UnmapLargeArray(p, n * sizeof(T));
  }
  template <typename U>
  bool operator==(const LargeArrayAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using LargeVector = std::vector<T, LargeArrayAllocator<T>>;

// An uninitialised buffer of chars from LargeArrayAllocator (a vector would zero-fill it, making
// every page resident up front).
struct LargeBufferDeleter {
  size_t bytes = 0;
  void operator()(char* p) const { LargeArrayAllocator<char>().deallocate(p, bytes); }
};
using LargeBuffer = std::unique_ptr<char[], LargeBufferDeleter>;
inline LargeBuffer MakeLargeBuffer(size_t bytes) {
  return LargeBuffer(LargeArrayAllocator<char>().allocate(bytes), LargeBufferDeleter{bytes});
}

}  // namespace devtime::trace
