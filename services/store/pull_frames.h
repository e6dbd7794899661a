// The messages of a Pull stream, encoded for the wire without copying tensor bytes: each message
// is a grpc::ByteBuffer whose bytes are exactly what protobuf writes for that v1::PullMessage, and
// whose chunk payload is a slice pointing into the immutable snapshot (which the slice keeps alive
// until gRPC has sent it). Every puller of a round shares the snapshot's memory; nothing is copied
// between the table and the socket.
#ifndef SYNCOPATE_STORE_PULL_FRAMES_H_
#define SYNCOPATE_STORE_PULL_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "grpcpp/support/byte_buffer.h"
#include "store/parameter_table.h"

namespace syncopate::store {

// Walks a snapshot as a pull stream: the header, then each tensor's chunks in order, cut as
// tensor::ForEachChunk cuts them for `chunk_bytes` (clamped the same way).
class PullFrames {
 public:
  PullFrames(std::shared_ptr<const ModelSnapshot> snapshot, uint32_t chunk_bytes);

  // The next message, false after the last. Payload bytes so far are in bytes().
  bool Next(grpc::ByteBuffer* message);
  uint64_t bytes() const { return bytes_; }

 private:
  const std::shared_ptr<const ModelSnapshot> snapshot_;
  const size_t per_chunk_;  // floats
  bool header_sent_ = false;
  size_t tensor_ = 0;
  size_t offset_ = 0;  // floats into tensor_
  uint64_t bytes_ = 0;
};

// One chunk message: PullMessage{chunk: TensorChunk{tensor, offset, data}} for `count` floats
// of the snapshot's tensor `index` from `offset`. The data slice refers to the snapshot.
grpc::ByteBuffer EncodePullChunk(const std::shared_ptr<const ModelSnapshot>& snapshot, size_t index,
                                 size_t offset, size_t count);

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_PULL_FRAMES_H_
