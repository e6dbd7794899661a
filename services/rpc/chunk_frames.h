// Tensor chunks encoded for the wire without copying their bytes: the message a Push, Pull or
// peer Exchange stream carries for one chunk, as a grpc::ByteBuffer whose bytes are exactly what
// protobuf writes for it, and whose payload is a slice pointing into the caller's memory. The
// slice holds a reference to that memory's owner until gRPC is done with it, so the sender makes
// no copy of its own (TLS still encrypts into its own buffers), and never has to guess when gRPC
// lets go.
#ifndef SYNCOPATE_RPC_CHUNK_FRAMES_H_
#define SYNCOPATE_RPC_CHUNK_FRAMES_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"

namespace syncopate::rpc {

// PushMessage{chunk: TensorChunk{tensor, offset, data}} for `values` (which PullMessage shares:
// both carry the chunk as field 2). `owner` keeps `values` alive and unchanged for as long as the
// buffer, or any copy gRPC makes of it, exists.
grpc::ByteBuffer EncodeChunkMessage(std::string_view tensor, uint64_t offset,
                                    absl::Span<const float> values,
                                    std::shared_ptr<const void> owner);

// Any other message, serialized into one slice (a stream's header).
grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_CHUNK_FRAMES_H_
