// Float buffers for one table's tensors, recycled. A buffer let go by its last holder (the table
// after a copy on write, a round snapshot dropped, a checkpoint that has written it) comes back
// here with its pages still mapped, and the next buffer of that size is that one: in steady state a
// push touches no fresh memory. A fresh 4 MiB buffer costs 1,024 page faults, and on a virtual
// machine each can cost 12 us while a disk writes (bench/docs/checkpoint-stall.md): that was most
// of a push's stall during a checkpoint. The glibc heap does not promise this reuse: a thread's
// arena unmaps a heap it has emptied.
#ifndef SYNCOPATE_STORE_TENSOR_BUFFERS_H_
#define SYNCOPATE_STORE_TENSOR_BUFFERS_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace syncopate::store {

// Thread-safe: buffers come back on whichever thread lets them go. They may outlive the pool (they
// are then freed).
class TensorBuffers {
 public:
  using Buffer = std::shared_ptr<std::vector<float>>;

  // Keeps at most `max_kept_bytes` of buffers for reuse; a buffer that would pass it is freed.
  explicit TensorBuffers(size_t max_kept_bytes = 0);
  TensorBuffers(const TensorBuffers&) = delete;
  TensorBuffers& operator=(const TensorBuffers&) = delete;

  // A buffer of `n` floats, a kept one when there is one of that size (its values are then what
  // they were), else zeros. Throws std::bad_alloc as a vector does.
  Buffer Take(size_t n);
  // A buffer holding a copy of `from`.
  Buffer Copy(const std::vector<float>& from);

  // The most it keeps from now on (buffers kept beyond it are freed).
  void SetMaxKeptBytes(size_t max_kept_bytes);
  size_t kept_bytes() const;

 private:
  struct Kept {
    mutable absl::Mutex mu;
    size_t max_bytes ABSL_GUARDED_BY(mu) = 0;
    size_t bytes ABSL_GUARDED_BY(mu) = 0;
    absl::flat_hash_map<size_t, std::vector<std::vector<float>>> by_size ABSL_GUARDED_BY(mu);
  };
  // The deleter of every buffer this pool made: gives the values back while the pool lives.
  struct GiveBack {
    std::weak_ptr<Kept> kept;
    void operator()(std::vector<float>* values) const;
  };

  Buffer Wrap(std::vector<float> values) const;

  std::shared_ptr<Kept> kept_;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_TENSOR_BUFFERS_H_
