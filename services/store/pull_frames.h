// The messages of a Pull stream, encoded for the wire without copying tensor bytes
// (rpc/chunk_frames.h): each chunk's payload is a slice pointing into the immutable snapshot, which
// the slice keeps alive until gRPC has sent it. Every puller of a round shares the snapshot's
// memory; nothing is copied between the table and the socket.
#ifndef SYNCOPATE_STORE_PULL_FRAMES_H_
#define SYNCOPATE_STORE_PULL_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "store/parameter_table.h"

namespace syncopate::store {

// Walks a snapshot as a pull stream: the header, then each tensor's chunks in order, cut by
// tensor::ForEachChunkRange for `chunk_bytes`.
class PullFrames {
 public:
  PullFrames(std::shared_ptr<const ModelSnapshot> snapshot, uint32_t chunk_bytes);

  // The next message, false after the last; then this lets the snapshot go (each message in flight
  // still holds it), so that pushes need not copy what it shares (ModelSnapshot) once the stream
  // is sent. Payload bytes so far are in bytes().
  bool Next(grpc::ByteBuffer* message);
  uint64_t bytes() const { return bytes_; }

 private:
  struct Chunk {
    size_t tensor;  // index into the snapshot's tensors
    size_t offset;  // floats
    size_t count;
  };

  std::shared_ptr<const ModelSnapshot> snapshot_;  // null after the last message
  std::vector<Chunk> chunks_;                      // in stream order
  bool header_sent_ = false;
  size_t next_ = 0;  // into chunks_
  uint64_t bytes_ = 0;
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_PULL_FRAMES_H_
