#include "base/allocator.h"

#include <malloc.h>

#include "absl/synchronization/mutex.h"

namespace syncopate::base {

void TuneAllocatorForLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void ReleaseFreeMemory() { malloc_trim(0); }

void SkipMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace syncopate::base
