// One store shard's part of a trainer's immediate pushes that the shard applied but has not yet
// written to a checkpoint: what the trainer re-sends when the shard restarts from an older
// checkpoint, so that every push is applied exactly once across a restart (docs/faults.md).
//
// The shard numbers its checkpoints' cuts (epochs): a push applied in epoch e is in every
// checkpoint cut after it, and durable once the shard says checkpoints through epoch e+1 are
// written. Pushes of one epoch are kept as one weighted sum (weight x delta, added up), so the
// memory is a few copies of the shard's part of the model however many pushes there were; a sum
// re-sent with weight 1 moves the model as its pushes did.
#ifndef SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_
#define SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor_spec.h"

namespace syncopate::client {

// The pushes of one epoch (or a sum a restart lost), summed.
struct PushSum {
  uint64_t last_sequence = 0;  // the newest push in it: the sequence to re-send it under
  int64_t last_clock = 0;
  int pushes = 0;
  tensor::TensorMap sum;  // weight x delta, added up
};

// Thread-compatible: one shard's pushing thread uses it.
class UnsavedPushes {
 public:
  // Records a push the shard applied in `epoch` (its reply says which): `weight` x `delta`, for
  // the tensors named in `names` (those on this shard).
  void Add(int64_t epoch, uint64_t sequence, int64_t clock, float weight,
           const tensor::TensorMap& delta, const std::vector<const std::string*>& names);

  // The shard has written checkpoints through `durable_epoch`: pushes of earlier epochs are safe.
  void Release(int64_t durable_epoch);

  // The shard restarted from its checkpoint of `restored_epoch`: the pushes of that epoch and
  // later ones are lost there and queue up to be re-sent (after any still queued from an earlier
  // restart); earlier ones are in the checkpoint and dropped.
  void LoseFrom(int64_t restored_epoch);

  // The oldest lost sum to re-send, or null when none is left. Pop it once the shard took it.
  const PushSum* NextToResend() const { return resend_.empty() ? nullptr : &resend_.front(); }
  void PopResent() { resend_.pop_front(); }

  size_t epochs_kept() const { return by_epoch_.size(); }
  size_t to_resend() const { return resend_.size(); }

 private:
  std::map<int64_t, PushSum> by_epoch_;
  std::deque<PushSum> resend_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_UNSAVED_PUSHES_H_
