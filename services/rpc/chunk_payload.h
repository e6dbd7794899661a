// The float32 values of one received tensor chunk, left in the buffers they arrived in: gRPC's
// receive slices (chunk_frames.h decodes them out of a message without copying), or a string that
// protobuf parsed (a checkpoint's pending push). Whoever uses the values reads them from there,
// so a push is copied once on its way into the model, by the apply itself.
//
// The slices are gRPC's reference-counted buffers: holding a payload holds them, and nothing
// writes to them. A value may be split between two slices and need not be aligned; ForEachRun
// hands the values out as runs that never straddle.
#ifndef SYNCOPATE_RPC_CHUNK_PAYLOAD_H_
#define SYNCOPATE_RPC_CHUNK_PAYLOAD_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "grpcpp/support/slice.h"
#include "tensor/tensor.h"

namespace syncopate::rpc {

class ChunkPayload {
 public:
  ChunkPayload() = default;
  // Owns `bytes`.
  explicit ChunkPayload(std::string bytes);
  // The `size` bytes of `slices` that start `offset` bytes into the first slice; the slices
  // must hold that many.
  ChunkPayload(std::vector<grpc::Slice> slices, size_t offset, size_t size);

  size_t bytes() const { return size_; }
  // Whole float32 values (bytes() / 4).
  size_t size() const { return size_ / sizeof(float); }

  // Calls `run(first, values)` for consecutive runs of the payload's whole values, in order:
  // `first` is the index of values[0] in the payload. A value split between two slices comes as a
  // run of one, read into a local copy. Trailing bytes short of a value are left out.
  void ForEachRun(
      const std::function<void(size_t first, tensor::UnalignedFloats values)>& run) const;

  // Copies every byte to `out` (bytes() of room).
  void CopyTo(char* out) const;
  void AppendTo(std::string* out) const;

 private:
  std::vector<grpc::Slice> slices_;
  size_t offset_ = 0;  // into slices_[0]
  size_t size_ = 0;
};

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_CHUNK_PAYLOAD_H_
