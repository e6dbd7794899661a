// Tensor chunks to and from the wire without copying their bytes. Encoding: the message a Push,
// Pull or peer Exchange stream carries for one chunk, as a grpc::ByteBuffer whose bytes are exactly
// what protobuf writes for it, and whose payload is a slice pointing into the caller's memory. The
// slice holds a reference to that memory's owner until gRPC is done with it, so the sender makes
// no copy of its own (TLS still encrypts into its own buffers), and never has to guess when gRPC
// lets go. Decoding: a received message read in place, its payload left in gRPC's receive slices
// (StreamMessage, ChunkPayload).
#ifndef SYNCOPATE_RPC_CHUNK_FRAMES_H_
#define SYNCOPATE_RPC_CHUNK_FRAMES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "rpc/chunk_payload.h"

namespace syncopate::rpc {

// PushMessage{chunk: TensorChunk{tensor, offset, data}} for `values` (which PullMessage shares:
// both carry the chunk as field 2). `owner` keeps `values` alive and unchanged for as long as the
// buffer, or any copy gRPC makes of it, exists.
grpc::ByteBuffer EncodeChunkMessage(std::string_view tensor, uint64_t offset,
                                    absl::Span<const float> values,
                                    std::shared_ptr<const void> owner);

// Any other message, serialized into one slice (a stream's header).
grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message);

// One received message of a Push, Pull or Exchange stream, decoded without copying the chunk's
// payload: it stays in the message's slices, gRPC's receive buffers.
struct StreamMessage {
  enum class Kind { kNeither, kHeader, kChunk };
  Kind kind = Kind::kNeither;
  std::string header;  // kHeader: the header's serialized bytes, for the stream's header type
  std::string tensor;  // kChunk: the TensorChunk's fields
  uint64_t offset = 0;
  ChunkPayload payload;
};

// A payload that will be kept (a push queued for its round) is copied out below this size: a
// slice holds the whole receive buffer it points into, so a small payload could hold many times
// its size. A larger one holds at most the buffers at its two ends beyond its own bytes.
inline constexpr size_t kCopyKeptPayloadsBelow = 64 << 10;

// Reads a PushMessage or PullMessage as protobuf parses one (fields in any order, unknown fields
// skipped, the last occurrence of a field counts; of the oneof's header and chunk, the last one),
// except where no sender writes what differs: protobuf would merge two occurrences of the header
// or of the chunk (this keeps the last), check the losing oneof member, and check that the tensor
// name is UTF-8 (one that is not is a name no header has), and it skips group wire types (refused
// here). A payload under `copy_below` bytes is copied out. DATA_LOSS "malformed `kind` message:
// ..." where the bytes are not a message.
absl::StatusOr<StreamMessage> DecodeStreamMessage(const grpc::ByteBuffer& message,
                                                  absl::string_view kind, size_t copy_below = 0);

// Which member of a message's oneof of messages is set, as protobuf parses it: the number of its
// last length-delimited field among `first`..`last` (0: none), read without copying anything (a
// Transfer stream's TransferRequest or TransferReply, whose push and pull members share the
// numbers of PushMessage's and PullMessage's). DATA_LOSS as DecodeStreamMessage.
absl::StatusOr<int> OneofMember(const grpc::ByteBuffer& message, absl::string_view kind, int first,
                                int last);

}  // namespace syncopate::rpc

#endif  // SYNCOPATE_RPC_CHUNK_FRAMES_H_
