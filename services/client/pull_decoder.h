// Assembles a model from the raw messages of one Pull stream (v1::PullMessage on the wire),
// copying each chunk's payload once: from gRPC's receive slices straight into the tensor, which
// is not zero-filled first when the chunks come in order. The protobuf path copied it twice more
// (into the message's string, then into the tensor).
//
// Reads each message as protobuf would (rpc::DecodeStreamMessage) and refuses, with DATA_LOSS or
// INVALID_ARGUMENT, what the protobuf path refused: a malformed message, a payload that is not
// whole floats, a chunk before the header or outside the header's tensors.
#ifndef SYNCOPATE_CLIENT_PULL_DECODER_H_
#define SYNCOPATE_CLIENT_PULL_DECODER_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "client/links.h"
#include "grpcpp/support/byte_buffer.h"

namespace syncopate::client {

class PullDecoder {
 public:
  // One message of the stream, in order.
  absl::Status Add(const grpc::ByteBuffer& message);
  // The payload bytes of the last chunk added (0 after a header), for ingress pacing.
  uint64_t last_payload() const { return last_payload_; }
  // The model so far: call after the stream ended well. DATA_LOSS if no header came.
  absl::Status Finish(PulledModel* out);

 private:
  absl::Status AddHeader(const std::string& bytes);

  bool have_header_ = false;
  PulledModel model_;
  // Each tensor's size from the header: the tensors grow as their chunks arrive in order.
  absl::flat_hash_map<std::string, size_t> sizes_;
  uint64_t last_payload_ = 0;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PULL_DECODER_H_
