#include "client/pull_decoder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/chunk_frames.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {

absl::Status PullDecoder::AddHeader(const std::string& bytes) {
  v1::PullHeader header;
  if (!header.ParseFromString(bytes)) {
    return absl::DataLossError("malformed pull message: unparsable header");
  }
  have_header_ = true;
  model_.checksums.assign(1, header.checksum());
  model_.round = header.round();
  model_.tensors.clear();
  sizes_.clear();
  for (const v1::TensorSpec& spec : header.tensors()) {
    const size_t size = tensor::FromProto(spec).NumElements();
    model_.tensors[spec.name()].reserve(size);  // filled by the chunks, not zeroed first
    sizes_[spec.name()] = size;
  }
  return absl::OkStatus();
}

absl::Status PullDecoder::Add(const grpc::ByteBuffer& message) {
  last_payload_ = 0;
  absl::StatusOr<rpc::StreamMessage> decoded = rpc::DecodeStreamMessage(message, "pull");
  if (!decoded.ok()) return decoded.status();
  switch (decoded->kind) {
    case rpc::StreamMessage::Kind::kHeader:
      return AddHeader(decoded->header);
    case rpc::StreamMessage::Kind::kNeither:
      // Protobuf parses it with the oneof unset: what the protobuf path refused.
      return absl::DataLossError("pull message with neither a header nor a chunk");
    case rpc::StreamMessage::Kind::kChunk:
      break;
  }
  const std::string& name = decoded->tensor;
  const rpc::ChunkPayload& data = decoded->payload;
  if (!have_header_) return absl::DataLossError("pull stream sent a chunk before its header");
  if (absl::Status whole = tensor::CheckWholeFloats(name, data.bytes()); !whole.ok()) {
    return whole;
  }
  auto size = sizes_.find(name);
  const uint64_t offset = decoded->offset;
  const uint64_t count = data.size();
  if (size == sizes_.end() || offset > size->second || count > size->second - offset) {
    return absl::DataLossError("sent a chunk outside its header's tensors");
  }
  std::vector<float>& values = model_.tensors[name];
  if (offset == values.size()) {  // the next chunk in order, as every sender sends them
    data.ForEachRun([&values](size_t, tensor::UnalignedFloats run) {
      values.insert(values.end(), run.begin(), run.end());
    });
  } else {
    values.resize(size->second);
    data.CopyTo(reinterpret_cast<char*>(values.data() + offset));
  }
  model_.bytes += data.bytes();
  last_payload_ = data.bytes();
  return absl::OkStatus();
}

absl::Status PullDecoder::Finish(PulledModel* out) {
  if (!have_header_) return absl::DataLossError("pull stream without a header");
  for (auto& [name, values] : model_.tensors) values.resize(sizes_[name]);  // zeros where no chunk
  *out = std::move(model_);
  model_ = PulledModel();
  have_header_ = false;
  return absl::OkStatus();
}

}  // namespace syncopate::client
