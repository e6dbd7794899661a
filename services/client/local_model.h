// A trainer's parameters with the bookkeeping local SGD needs: the base the next pushed delta is
// measured from, and the pushed deltas that no pulled round contains yet. A pull is a rebase:
//
//   new_local = pulled + (own pending deltas the round does not contain) + (local - base)
//
// so neither the local steps taken since the last push nor the trainer's own pushes still waiting
// for a later round are lost (the published WBSP code loses both). For modes without pending
// pushes and without steps since the push, this is exactly "load the pulled model".
#ifndef SYNCOPATE_CLIENT_LOCAL_MODEL_H_
#define SYNCOPATE_CLIENT_LOCAL_MODEL_H_

#include <cstdint>
#include <deque>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/parameters.h"
#include "tensor/compression.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

// Not thread-safe: the session calls it between the caller's steps, on the caller's thread.
class LocalModel {
 public:
  // `parameters` must outlive this. Call Begin before anything else.
  explicit LocalModel(Parameters& parameters) : parameters_(parameters) {}
  // The job compresses its pushes (tensor/compression.h): each delta TakeDelta gives is the
  // compressed one, and what compression left out of it comes with the next (error feedback).
  // Call before the first TakeDelta.
  void Compress(const tensor::Compression& compression) { feedback_.emplace(compression); }
  // The parameters' current values become the base. The parameters' read error as it is.
  absl::Status Begin();

  // Counts one training step the caller took on the parameters. Every change the caller makes to
  // the parameters must be counted before the next call here: a rebase with no step counted since
  // the base was taken does not read the parameters (it writes the new base).
  void CountStep() {
    ++unpushed_steps_;
    base_is_current_ = false;
  }

  // The change since the last TakeDelta or Rebase (compressed, under Compress); the base moves to
  // the current model. With a
  // `pending_clock` (round pushes) the delta is also kept until a pulled round includes it. The
  // parameters' read error as it is, and INTERNAL when the parameters no longer have the base's
  // tensors and sizes (nothing changes either way). The delta is shared, not copied, with the
  // pending list.
  absl::StatusOr<tensor::SharedTensorMap> TakeDelta(std::optional<int64_t> pending_clock);

  // Rebases onto `pulled` (see above). `includes_clock`: the trainer's pushes up to this clock are
  // in `pulled` (-1: none). INVALID_ARGUMENT (nothing changes) when `pulled` lacks a parameter or
  // has a wrong size; the parameters' read or write error as it is. Taken by value: the new base
  // is built in `pulled`'s buffers.
  absl::Status Rebase(tensor::TensorMap pulled, int64_t includes_clock);

  // The parameters and the base become `model`: the local steps since the last TakeDelta are
  // dropped (a peer-to-peer exchange's average replaces the local model), pending deltas are kept.
  // INVALID_ARGUMENT (nothing changes) when `model` lacks a parameter or has a wrong size; the
  // parameters' write error as it is.
  absl::Status Replace(const tensor::TensorMap& model);

  // Under Compress: what the compressed deltas left out so far (error feedback), whole, for a last
  // push as the trainer leaves; it is forgotten here. Nullopt when nothing is left out (no
  // compression, or every value sent).
  std::optional<tensor::SharedTensorMap> TakeResidual();

  // Steps since the last TakeDelta.
  int64_t unpushed_steps() const { return unpushed_steps_; }
  size_t pending_deltas() const { return pending_.size(); }
  absl::Status Read(tensor::TensorMap* out) const { return parameters_.Read(out); }

 private:
  struct Pending {
    int64_t clock;
    tensor::SharedTensorMap delta;
  };

  // INVALID_ARGUMENT unless `pulled` has every parameter of the base, at its size.
  absl::Status CheckShapes(const tensor::TensorMap& pulled) const;
  // Writes `local` (null: `new_base` itself) to the parameters; then `new_base` becomes the base.
  absl::Status WriteAndRebase(const tensor::TensorMap* local, tensor::TensorMap new_base);

  Parameters& parameters_;
  std::optional<tensor::ErrorFeedback> feedback_;
  tensor::TensorMap base_;
  std::deque<Pending> pending_;
  int64_t unpushed_steps_ = 0;
  // The parameters equal base_ (no step since it was taken), up to their own rounding of a Write
  // (say, of fp16 tensors).
  bool base_is_current_ = false;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_LOCAL_MODEL_H_
