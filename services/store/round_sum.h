// The weighted sum of a shard's pending ROUND pushes, added up as each push is taken in, so that a
// round which takes every pending push (BSP's rounds, and every round in which nobody ran ahead)
// closes with one pass over the model instead of one per push: the close, on every trainer's
// critical path, no longer grows with the number of trainers. Each push pays for its add when it
// arrives instead (under the table's lock, as the close did).
//
// The sum holds exactly the pushes added since the last Reset, for as long as it is valid. Once
// the table leaves pending a push the sum holds (a cut that takes only some pushes, a departed
// trainer's leftovers), it Invalidates the sum, which frees its buffers and takes no pushes until
// the next Reset (when nothing is pending): modes whose cuts never take everything pay no adds and
// hold no buffers for it. While valid it holds one buffer per tensor its pushes named: one model's
// worth of memory at most.
// Not thread-safe: the table's lock guards it.
#ifndef SYNCOPATE_STORE_ROUND_SUM_H_
#define SYNCOPATE_STORE_ROUND_SUM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rpc/push_assembler.h"
#include "store/tensor_buffers.h"

namespace syncopate::store {

class RoundSum {
 public:
  // Below `limit` on the sum of |weight| x the largest |value| of each push, no element of the sum
  // can overflow float.
  // Its buffers come from `buffers` (which outlives it), and go back there.
  RoundSum(double limit, TensorBuffers& buffers) : limit_(limit), buffers_(buffers) {}

  // Adds the push's values at its weight (header.weight(); a validated push: each of its tensors
  // covered once), when valid; nothing when not. A tensor the sum does not hold yet is written
  // rather than added to. Invalidates the sum instead when its bound would reach the limit, or
  // when a buffer cannot be allocated: never throws, and the sum then never holds part of a push.
  void Add(const rpc::StagedPush& push);
  // Empty and valid again: the next round's sum starts here.
  void Reset();
  // Stops taking pushes until Reset, and frees the buffers: the sum no longer matches what is
  // pending.
  void Invalidate();

  bool valid() const { return valid_; }
  // The pushes added since the last Reset.
  uint32_t pushes() const { return pushes_; }
  // The sum of each added push's |weight| x its largest |value|: at least every element's magnitude
  // (up to float rounding).
  double bound() const { return bound_; }
  // The sum for a tensor; nullptr when no added push named it.
  const std::vector<float>* Of(const std::string& name) const;
  // Moves a tensor's sum out (null when no added push named it), for the close to make it the
  // model's new values: the sum no longer holds the tensor, and the next push that names it writes
  // another buffer.
  TensorBuffers::Buffer Take(const std::string& name);

 private:
  struct Accumulator {
    TensorBuffers::Buffer values;  // taken when a push first names the tensor after a Take
    bool holds = false;            // false: `values` are stale, the next push writes them
  };

  const double limit_;
  TensorBuffers& buffers_;
  bool valid_ = true;
  uint32_t pushes_ = 0;
  double bound_ = 0;
  std::map<std::string, Accumulator> tensors_;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_ROUND_SUM_H_
