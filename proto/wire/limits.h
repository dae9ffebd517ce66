// The wire contract's explicit limits (documented in proto/devtime/v1/run.proto). Both the
// collector (validation, gRPC receive size) and the clients (channel send size) use these.
#pragma once

#include <cstddef>

namespace devtime::wire {

inline constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;
inline constexpr std::size_t kMaxIdentityBytes = 256;
inline constexpr std::size_t kMaxOps = 20'000;
inline constexpr std::size_t kMaxOpNameBytes = 2'048;
inline constexpr std::size_t kMaxStepSamples = 10'000;
inline constexpr std::size_t kMaxSteps = 10'000;
inline constexpr std::size_t kMaxEnvironmentEntries = 256;
inline constexpr std::size_t kMaxEnvironmentKeyBytes = 128;
inline constexpr std::size_t kMaxEnvironmentValueBytes = 1'024;
inline constexpr std::size_t kMaxArtifacts = 1'024;
inline constexpr std::size_t kMaxUriBytes = 4'096;
inline constexpr std::size_t kMaxReasonBytes = 4'096;
// RunSummary fields added for issue 12.
inline constexpr std::size_t kMaxWarnings = 256;
inline constexpr std::size_t kMaxWarningKindBytes = 64;
inline constexpr std::size_t kMaxWarningMessageBytes = 4'096;
inline constexpr std::size_t kTopKernels = 50;  // named rows; the rest sum into one more row
inline constexpr std::size_t kMaxKernels = kTopKernels + 1;
inline constexpr std::size_t kMaxKernelNameBytes = 2'048;
inline constexpr char kOtherKernelsName[] = "(other kernels)";
inline constexpr unsigned kMaxListLimit = 10'000;

}  // namespace devtime::wire
