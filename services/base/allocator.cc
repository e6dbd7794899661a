#include "base/allocator.h"

#include <malloc.h>

namespace syncopate::base {

void TuneAllocatorForLargeBuffers() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace syncopate::base
