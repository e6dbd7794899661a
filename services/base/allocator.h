// Allocator settings for processes that stream large tensors.
#ifndef SYNCOPATE_BASE_ALLOCATOR_H_
#define SYNCOPATE_BASE_ALLOCATOR_H_

namespace syncopate::base {

// glibc serves each 1 MiB chunk buffer with mmap and returns it on free, so every chunk costs 256
// page faults on both ends of a stream. Raising the mmap and trim thresholds keeps those buffers in
// the heap for reuse: measured ~1.6x push+pull throughput (bench/README.md). Call once at start.
void TuneAllocatorForLargeBuffers();

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_ALLOCATOR_H_
