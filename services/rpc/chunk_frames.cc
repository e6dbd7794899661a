#include "rpc/chunk_frames.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "syncopate/v1/store.pb.h"

namespace syncopate::rpc {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

constexpr int kMessageHeader = v1::PushMessage::kHeaderFieldNumber;
constexpr int kMessageChunk = v1::PushMessage::kChunkFieldNumber;
static_assert(v1::PullMessage::kChunkFieldNumber == kMessageChunk &&
                  v1::PullMessage::kHeaderFieldNumber == kMessageHeader,
              "Push and Pull messages carry a header and a chunk under the same fields");
static_assert(v1::TransferRequest::kPushFieldNumber == kMessageHeader &&
                  v1::TransferRequest::kChunkFieldNumber == kMessageChunk &&
                  v1::TransferReply::kPullHeaderFieldNumber == kMessageHeader &&
                  v1::TransferReply::kChunkFieldNumber == kMessageChunk,
              "a Transfer stream carries pushes and pulls as Push and Pull streams do");
constexpr int kChunkTensor = v1::TensorChunk::kTensorFieldNumber;
constexpr int kChunkOffset = v1::TensorChunk::kOffsetFieldNumber;
constexpr int kChunkData = v1::TensorChunk::kDataFieldNumber;

uint32_t LengthTag(int field) {
  return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

void AppendVarint(uint64_t value, std::string* out) {
  uint8_t buffer[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, buffer);
  out->append(reinterpret_cast<const char*>(buffer), end - buffer);
}

size_t VarintSize(uint64_t value) { return CodedOutputStream::VarintSize64(value); }

// gRPC's slice takes a C callback and one pointer: the owner's reference travels as a heap-held
// shared_ptr, the one raw new/delete pair here.
void ReleaseOwner(void* held) { delete static_cast<std::shared_ptr<const void>*>(held); }

constexpr uint32_t kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr uint32_t kFixed64 = WireFormatLite::WIRETYPE_FIXED64;
constexpr uint32_t kLengthDelimited = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr uint32_t kFixed32 = WireFormatLite::WIRETYPE_FIXED32;

absl::Status Malformed(absl::string_view kind, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed ", kind, " message: ", what));
}

// Reads protobuf wire format across a message's slices without joining them.
class SliceReader {
 public:
  struct Position {
    size_t slice = 0;
    size_t offset = 0;
  };

  // Reads all of `slices`.
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& s : slices) left_ += s.size();
  }
  // Reads the `size` bytes from `from` (a position of a reader over the same slices).
  SliceReader(const std::vector<grpc::Slice>& slices, Position from, size_t size)
      : slices_(slices), at_(from), left_(size) {}

  size_t left() const { return left_; }
  Position position() const { return at_; }

  bool ReadByte(uint8_t* byte) {
    if (left_ == 0) return false;
    Settle();
    *byte = slices_[at_.slice].begin()[at_.offset];
    Advance(1);
    return true;
  }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte;
      if (!ReadByte(&byte)) return false;
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes
  }

  bool Skip(uint64_t n) {
    if (n > left_) return false;
    Advance(n);
    return true;
  }

  // Copies `n` bytes from `from` (a position of this reader) into `out`.
  void CopyFrom(Position from, size_t n, char* out) const {
    while (n > 0) {
      const grpc::Slice& s = slices_[from.slice];
      const size_t take = std::min(n, s.size() - from.offset);
      if (take > 0) std::memcpy(out, s.begin() + from.offset, take);
      out += take;
      n -= take;
      ++from.slice;
      from.offset = 0;
    }
  }

 private:
  // Moves past empty slices and ends of slices.
  void Settle() {
    while (at_.offset == slices_[at_.slice].size()) {
      ++at_.slice;
      at_.offset = 0;
    }
  }
  void Advance(uint64_t n) {
    left_ -= n;
    while (n > 0) {
      Settle();
      const size_t take = std::min<uint64_t>(n, slices_[at_.slice].size() - at_.offset);
      at_.offset += take;
      n -= take;
    }
  }

  const std::vector<grpc::Slice>& slices_;
  Position at_;
  size_t left_ = 0;
};

// A length-delimited field: where its bytes start and how many there are.
struct Span {
  SliceReader::Position at;
  uint64_t size = 0;
};

// Reads the next tag and, for a length-delimited field, its extent (skipping its bytes); skips
// other fields' values into `varint` (the value of a varint field).
absl::Status NextField(SliceReader& in, absl::string_view kind, uint32_t* field, uint32_t* type,
                       Span* span, uint64_t* varint) {
  uint64_t tag;
  if (!in.ReadVarint(&tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
    return Malformed(kind, "bad tag");
  *field = static_cast<uint32_t>(tag >> 3);
  *type = static_cast<uint32_t>(tag & 7);
  switch (*type) {
    case kVarint:
      if (!in.ReadVarint(varint)) return Malformed(kind, "truncated varint");
      return absl::OkStatus();
    case kFixed64:
      if (!in.Skip(8)) return Malformed(kind, "truncated fixed64");
      return absl::OkStatus();
    case kFixed32:
      if (!in.Skip(4)) return Malformed(kind, "truncated fixed32");
      return absl::OkStatus();
    case kLengthDelimited:
      if (!in.ReadVarint(&span->size)) return Malformed(kind, "truncated length");
      span->at = in.position();
      if (!in.Skip(span->size)) return Malformed(kind, "field longer than its message");
      return absl::OkStatus();
    default:
      return Malformed(kind, absl::StrCat("wire type ", *type));
  }
}

std::string Copy(const SliceReader& in, const Span& span) {
  std::string out(span.size, '\0');
  in.CopyFrom(span.at, span.size, out.data());
  return out;
}

// A span's bytes: in the slices it lies in (from its offset into the first), or copied when
// below `copy_below` bytes.
ChunkPayload PayloadOf(const SliceReader& in, const std::vector<grpc::Slice>& slices,
                       const Span& span, size_t copy_below) {
  if (span.size < copy_below) return ChunkPayload(Copy(in, span));
  SliceReader::Position at = span.at;
  while (at.slice < slices.size() && at.offset == slices[at.slice].size()) {  // not a slice's end
    ++at.slice;
    at.offset = 0;
  }
  std::vector<grpc::Slice> held;
  size_t left = span.size + at.offset;
  for (size_t i = at.slice; i < slices.size() && left > 0; ++i) {
    held.push_back(slices[i]);
    left -= std::min(left, slices[i].size());
  }
  return ChunkPayload(std::move(held), at.offset, span.size);
}

}  // namespace

grpc::ByteBuffer EncodeChunkMessage(std::string_view tensor, uint64_t offset,
                                    absl::Span<const float> values,
                                    std::shared_ptr<const void> owner) {
  const size_t data_bytes = values.size() * sizeof(float);
  // TensorChunk's fields in field order; proto3 leaves out the ones at their default.
  size_t chunk_size = 0;
  if (!tensor.empty()) chunk_size += 1 + VarintSize(tensor.size()) + tensor.size();
  if (offset != 0) chunk_size += 1 + VarintSize(offset);
  if (data_bytes != 0) chunk_size += 1 + VarintSize(data_bytes) + data_bytes;

  std::string prefix;
  prefix.reserve(32 + tensor.size());
  AppendVarint(LengthTag(kMessageChunk), &prefix);
  AppendVarint(chunk_size, &prefix);
  if (!tensor.empty()) {
    AppendVarint(LengthTag(kChunkTensor), &prefix);
    AppendVarint(tensor.size(), &prefix);
    prefix.append(tensor);
  }
  if (offset != 0) {
    AppendVarint(WireFormatLite::MakeTag(kChunkOffset, WireFormatLite::WIRETYPE_VARINT), &prefix);
    AppendVarint(offset, &prefix);
  }
  if (data_bytes == 0) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  AppendVarint(LengthTag(kChunkData), &prefix);
  AppendVarint(data_bytes, &prefix);
  grpc::Slice slices[2] = {
      grpc::Slice(prefix),
      grpc::Slice(const_cast<float*>(values.data()), data_bytes, &ReleaseOwner,
                  new std::shared_ptr<const void>(std::move(owner))),
  };
  return grpc::ByteBuffer(slices, 2);
}

grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

absl::StatusOr<int> OneofMember(const grpc::ByteBuffer& message, absl::string_view kind, int first,
                                int last) {
  std::vector<grpc::Slice> slices;
  if (!message.Dump(&slices).ok()) return Malformed(kind, "unreadable buffer");
  SliceReader in(slices);
  int member = 0;
  while (in.left() > 0) {
    uint32_t field, type;
    Span span;
    uint64_t varint;
    RETURN_IF_ERROR(NextField(in, kind, &field, &type, &span, &varint));
    if (type == kLengthDelimited && static_cast<int>(field) >= first &&
        static_cast<int>(field) <= last) {
      member = static_cast<int>(field);
    }
  }
  return member;
}

absl::StatusOr<StreamMessage> DecodeStreamMessage(const grpc::ByteBuffer& message,
                                                  absl::string_view kind, size_t copy_below) {
  std::vector<grpc::Slice> slices;
  if (!message.Dump(&slices).ok()) return Malformed(kind, "unreadable buffer");
  SliceReader in(slices);
  // A oneof: the last of header and chunk wins, as protobuf parses it.
  StreamMessage out;
  Span member;
  while (in.left() > 0) {
    uint32_t field, type;
    Span span;
    uint64_t varint;
    RETURN_IF_ERROR(NextField(in, kind, &field, &type, &span, &varint));
    if (type != kLengthDelimited) continue;
    if (field == kMessageHeader) {
      out.kind = StreamMessage::Kind::kHeader;
      member = span;
    } else if (field == kMessageChunk) {
      out.kind = StreamMessage::Kind::kChunk;
      member = span;
    }
  }
  if (out.kind == StreamMessage::Kind::kHeader) {
    out.header = Copy(in, member);
    return out;
  }
  if (out.kind == StreamMessage::Kind::kNeither) return out;  // as protobuf parses it: neither set

  // The chunk's fields, from a reader limited to the chunk.
  Span data;  // none: an empty payload
  SliceReader walk(slices, member.at, member.size);
  while (walk.left() > 0) {
    uint32_t field, type;
    Span span;
    uint64_t varint = 0;
    RETURN_IF_ERROR(NextField(walk, kind, &field, &type, &span, &varint));
    if (field == kChunkTensor && type == kLengthDelimited) out.tensor = Copy(walk, span);
    if (field == kChunkOffset && type == kVarint) out.offset = varint;
    if (field == kChunkData && type == kLengthDelimited) data = span;
  }
  out.payload = PayloadOf(walk, slices, data, copy_below);
  return out;
}

}  // namespace syncopate::rpc
