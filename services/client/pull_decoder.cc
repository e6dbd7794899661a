#include "client/pull_decoder.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/wire_format_lite.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {
namespace {

// Field numbers from the generated code, wire types from protobuf's own definitions.
using google::protobuf::internal::WireFormatLite;
constexpr uint32_t kMessageHeader = v1::PullMessage::kHeaderFieldNumber;
constexpr uint32_t kMessageChunk = v1::PullMessage::kChunkFieldNumber;
constexpr uint32_t kChunkTensor = v1::TensorChunk::kTensorFieldNumber;
constexpr uint32_t kChunkOffset = v1::TensorChunk::kOffsetFieldNumber;
constexpr uint32_t kChunkData = v1::TensorChunk::kDataFieldNumber;
constexpr uint32_t kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr uint32_t kFixed64 = WireFormatLite::WIRETYPE_FIXED64;
constexpr uint32_t kLengthDelimited = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr uint32_t kFixed32 = WireFormatLite::WIRETYPE_FIXED32;

absl::Status Malformed(const std::string& what) {
  return absl::DataLossError(absl::StrCat("malformed pull message: ", what));
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
      std::memcpy(out, s.begin() + from.offset, take);
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
absl::Status NextField(SliceReader& in, uint32_t* field, uint32_t* type, Span* span,
                       uint64_t* varint) {
  uint64_t tag;
  if (!in.ReadVarint(&tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return Malformed("bad tag");
  *field = static_cast<uint32_t>(tag >> 3);
  *type = static_cast<uint32_t>(tag & 7);
  switch (*type) {
    case kVarint:
      if (!in.ReadVarint(varint)) return Malformed("truncated varint");
      return absl::OkStatus();
    case kFixed64:
      if (!in.Skip(8)) return Malformed("truncated fixed64");
      return absl::OkStatus();
    case kFixed32:
      if (!in.Skip(4)) return Malformed("truncated fixed32");
      return absl::OkStatus();
    case kLengthDelimited:
      if (!in.ReadVarint(&span->size)) return Malformed("truncated length");
      span->at = in.position();
      if (!in.Skip(span->size)) return Malformed("field longer than its message");
      return absl::OkStatus();
    default:
      return Malformed(absl::StrCat("wire type ", *type));
  }
}

std::string Copy(const SliceReader& in, const Span& span) {
  std::string out(span.size, '\0');
  in.CopyFrom(span.at, span.size, out.data());
  return out;
}

}  // namespace

absl::Status PullDecoder::AddHeader(const std::string& bytes) {
  v1::PullHeader header;
  if (!header.ParseFromString(bytes)) return Malformed("unparsable header");
  have_header_ = true;
  model_.checksums.assign(1, header.checksum());
  model_.round = header.round();
  model_.tensors.clear();
  for (const v1::TensorSpec& spec : header.tensors()) {
    model_.tensors[spec.name()].resize(tensor::FromProto(spec).NumElements());
  }
  return absl::OkStatus();
}

absl::Status PullDecoder::Add(const grpc::ByteBuffer& message) {
  last_payload_ = 0;
  std::vector<grpc::Slice> slices;
  if (!message.Dump(&slices).ok()) return Malformed("unreadable buffer");
  SliceReader in(slices);
  // A oneof: the last of header and chunk wins, as protobuf parses it.
  std::optional<Span> header, chunk;
  while (in.left() > 0) {
    uint32_t field, type;
    Span span;
    uint64_t varint;
    if (absl::Status s = NextField(in, &field, &type, &span, &varint); !s.ok()) return s;
    if (type != kLengthDelimited) continue;
    if (field == kMessageHeader) {
      header = span;
      chunk.reset();
    } else if (field == kMessageChunk) {
      chunk = span;
      header.reset();
    }
  }
  if (header) return AddHeader(Copy(in, *header));
  // A message with neither (protobuf parses it to an empty chunk): what the protobuf path refused.
  if (!chunk) return absl::DataLossError("pull message with neither a header nor a chunk");

  // The chunk's fields, from a reader limited to the chunk.
  std::string name;
  uint64_t offset = 0;
  Span data;
  SliceReader walk(slices, chunk->at, chunk->size);
  while (walk.left() > 0) {
    uint32_t field, type;
    Span span;
    uint64_t varint = 0;
    if (absl::Status s = NextField(walk, &field, &type, &span, &varint); !s.ok()) return s;
    if (field == kChunkTensor && type == kLengthDelimited) name = Copy(walk, span);
    if (field == kChunkOffset && type == kVarint) offset = varint;
    if (field == kChunkData && type == kLengthDelimited) data = span;
  }
  if (!have_header_) return absl::DataLossError("pull stream sent a chunk before its header");
  if (data.size % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk of '", name, "' has ", data.size, " bytes, not a multiple of 4"));
  }
  auto it = model_.tensors.find(name);
  const uint64_t count = data.size / sizeof(float);
  if (it == model_.tensors.end() || offset > it->second.size() ||
      count > it->second.size() - offset) {
    return absl::DataLossError("sent a chunk outside its header's tensors");
  }
  walk.CopyFrom(data.at, data.size, reinterpret_cast<char*>(it->second.data() + offset));
  model_.bytes += data.size;
  last_payload_ = data.size;
  return absl::OkStatus();
}

absl::Status PullDecoder::Finish(PulledModel* out) {
  if (!have_header_) return absl::DataLossError("pull stream without a header");
  *out = std::move(model_);
  model_ = PulledModel();
  have_header_ = false;
  return absl::OkStatus();
}

}  // namespace syncopate::client
