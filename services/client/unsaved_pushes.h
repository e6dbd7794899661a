// One store shard's part of a trainer's pushes that the shard took but has not confirmed as
// checkpointed: what the trainer re-sends when the shard restarts from an older checkpoint, so
// that every push is applied exactly once across a restart (docs/faults.md).
//
// Each shard process (incarnation) numbers its checkpoint cuts (epochs): a push taken in epoch e
// (applied, or pending for a round) is in every checkpoint cut after it, and safe once the shard
// says checkpoints through epoch e+1 are written. Pushes of one epoch are kept as one weighted sum
// (weight x delta, added up) with their total weight, so the memory is a few copies of the shard's
// part of the model however many pushes there were.
//
// After a restart every kept sum is re-sent, oldest first, under the sequence of its newest push.
// A cut never splits an epoch, so for this trainer a checkpoint holds a prefix of its sums in
// sequence order: the restored idempotency record turns the sums it holds into duplicates and
// takes the others once. Re-sent, a sum moves the model as its pushes did: immediate ones at once;
// round ones in the next round (their own rounds were lost on the shard), as one push of their
// total weight whose delta is their weighted mean.
#ifndef SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_
#define SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_spec.h"

namespace syncopate::client {

// The pushes of one epoch, summed.
struct PushSum {
  uint64_t last_sequence = 0;  // the newest push in it: the sequence to re-send it under
  int64_t last_clock = 0;
  int pushes = 0;
  bool round = false;     // ROUND pushes (else IMMEDIATE)
  double weight_sum = 0;  // their weights, added up
  tensor::TensorMap sum;  // weight x delta, added up
};

// Thread-compatible: one shard's pushing thread uses it.
class UnsavedPushes {
 public:
  // Keeps at most `max_sums` sums: a shard that cannot write its checkpoints must not make the
  // trainer's memory grow without end. Past it the oldest sum is dropped (no longer protected).
  explicit UnsavedPushes(size_t max_sums = 8) : max_sums_(max_sums) {}

  // Records a push the shard process `incarnation` took in `epoch` (its reply says which):
  // `weight` x `delta`, for the tensors named in `names` (those on this shard). `round`: a ROUND
  // push; `pushes`: how many it carries (a re-sent sum). Returns the pushes of a sum dropped to
  // stay within the limit (0 almost always).
  int Add(uint64_t incarnation, int64_t epoch, uint64_t sequence, int64_t clock, float weight,
          bool round, const tensor::TensorMap& delta, const std::vector<const std::string*>& names,
          int pushes = 1);

  // The shard process `incarnation` has written checkpoints through `durable_epoch`: its sums of
  // earlier epochs are safe.
  void Release(uint64_t incarnation, int64_t durable_epoch);

  // The shard restarted: every kept sum is to be re-sent, merged with those still queued in
  // sequence order.
  void LoseAll();

  // The oldest sum to re-send, or null when none is left. Pop it once the shard took it.
  const PushSum* NextToResend() const { return resend_.empty() ? nullptr : &resend_.front(); }
  void PopResent() { resend_.pop_front(); }

  size_t sums_kept() const { return by_epoch_.size(); }
  size_t to_resend() const { return resend_.size(); }

 private:
  const size_t max_sums_;
  std::map<std::pair<uint64_t, int64_t>, PushSum> by_epoch_;  // (incarnation, epoch)
  std::deque<PushSum> resend_;                                // by last_sequence
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_
