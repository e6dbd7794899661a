// Process-wide settings for the serving processes (store, coordinator, trainers) and the client
// library: allocator thresholds for large tensor buffers and the cost of lock bookkeeping.
#ifndef SYNCOPATE_BASE_ALLOCATOR_H_
#define SYNCOPATE_BASE_ALLOCATOR_H_

namespace syncopate::base {

// glibc serves each 1 MiB chunk buffer with mmap and returns it on free, so every chunk costs 256
// page faults on both ends of a stream. Raising the mmap and trim thresholds keeps those buffers in
// the heap for reuse: measured ~1.6x push+pull throughput (bench/README.md). Call once at start.
void TuneAllocatorForLargeBuffers();

// Returns the heap's free pages to the system (glibc's malloc_trim): what the thresholds above
// keep for reuse, a refused flood of large streams would otherwise hold for the process's life.
// Costs a walk over the free lists, and page faults on the next large buffers. Thread-safe.
void ReleaseFreeMemory();

// Debian builds Abseil without NDEBUG, so every absl::Mutex acquisition also updates a global
// lock-order graph (deadlock detection): about 2% of a busy trainer's CPU in a BSP round's
// profile. Serving processes turn it off; unit tests keep it, where it finds lock-order
// inversions. Call once at start, before any thread takes a lock.
void SkipMutexDeadlockDetection();

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_ALLOCATOR_H_
