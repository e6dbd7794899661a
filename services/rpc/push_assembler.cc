#include "rpc/push_assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/chunk_frames.h"

namespace syncopate::rpc {

void StagedChunk::AddTo(float* values, float scale) const {
  if (encoded) return encoded->AddTo(values + offset, scale);
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    tensor::ScaledAdd(values + offset + first, run, scale);
  });
}

void StagedChunk::ScaledCopyTo(float* values, float scale) const {
  if (encoded) return encoded->ScaledCopyTo(values + offset, scale);
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    tensor::ScaledCopy(values + offset + first, run, scale);
  });
}

bool StagedChunk::ScaledSumIsFinite(const float* values, float scale) const {
  if (encoded) return encoded->ScaledSumIsFinite(values + offset, scale);
  bool finite = true;
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    finite = finite && tensor::ScaledSumIsFinite(
                           absl::MakeConstSpan(values + offset + first, run.size), run, scale);
  });
  return finite;
}

void StagedChunk::AppendPayloadTo(std::string* out) const {
  if (encoded) {
    out->append(encoded->bytes());
  } else {
    payload.AppendTo(out);
  }
}

absl::Status PushAssembler::Add(const grpc::ByteBuffer& message) {
  absl::StatusOr<rpc::StreamMessage> decoded =
      rpc::DecodeStreamMessage(message, "push", copy_below_);
  if (!decoded.ok()) return absl::InvalidArgumentError(decoded.status().message());
  switch (decoded->kind) {
    case rpc::StreamMessage::Kind::kHeader: {
      v1::PushHeader header;
      if (!header.ParseFromString(decoded->header)) {
        return absl::InvalidArgumentError("malformed push message: unparsable header");
      }
      return AddHeader(header);
    }
    case rpc::StreamMessage::Kind::kChunk:
      return AddChunk(decoded->tensor, decoded->offset, std::move(decoded->payload));
    case rpc::StreamMessage::Kind::kNeither:
      break;
  }
  return absl::InvalidArgumentError("empty push message");
}

absl::Status PushAssembler::Add(v1::PushMessage& message) {
  switch (message.kind_case()) {
    case v1::PushMessage::kHeader:
      return AddHeader(*message.mutable_header());
    case v1::PushMessage::kChunk: {
      v1::TensorChunk& chunk = *message.mutable_chunk();
      return AddChunk(chunk.tensor(), chunk.offset(),
                      rpc::ChunkPayload(std::move(*chunk.mutable_data())));
    }
    default:
      return absl::InvalidArgumentError("empty push message");
  }
}

absl::Status PushAssembler::AddHeader(v1::PushHeader& header) {
  if (have_header_) return absl::InvalidArgumentError("second header in one push stream");
  if (header.tensors().empty()) return absl::InvalidArgumentError("push header names no tensors");
  if (!v1::Codec_IsValid(header.codec())) {
    return absl::InvalidArgumentError(absl::StrCat("unknown codec ", header.codec()));
  }
  if (!lookup_ && header.codec() != v1::CODEC_NONE) {
    return absl::InvalidArgumentError("an Initialize carries float32 values, not compressed ones");
  }
  for (const v1::TensorSpec& proto : header.tensors()) {
    tensor::TensorSpec spec = tensor::FromProto(proto);
    RETURN_IF_ERROR(tensor::ValidateSpec(spec));
    if (!index_.emplace(spec.name, push_.tensors.size()).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' named twice"));
    }
    if (lookup_) {
      std::optional<tensor::TensorSpec> held = lookup_(spec.name);
      if (!held) {
        return absl::NotFoundError(absl::StrCat("unknown tensor '", spec.name, "' on this shard"));
      }
      if (held->shape != spec.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", spec.name, "' has the wrong shape: ", spec.NumElements(),
                         " elements, store has ", held->NumElements()));
      }
    }
    push_.tensors.push_back(std::move(spec));
  }
  header.clear_tensors();
  push_.header = std::move(header);
  filled_.assign(push_.tensors.size(), 0);
  have_header_ = true;
  return absl::OkStatus();
}

absl::Status PushAssembler::AddChunk(const std::string& name, uint64_t offset,
                                     rpc::ChunkPayload payload) {
  if (!have_header_) return absl::InvalidArgumentError("push stream must start with a header");
  auto named = index_.find(name);
  if (named == index_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk for tensor '", name, "' that the header does not name"));
  }
  const size_t index = named->second;
  StagedChunk chunk{index, offset, {}, std::nullopt};
  if (push_.header.codec() != v1::CODEC_NONE) {
    std::string bytes;
    payload.AppendTo(&bytes);  // a compressed chunk is small: kept in one piece
    absl::StatusOr<tensor::EncodedChunk> encoded =
        tensor::EncodedChunk::Parse(push_.header.codec(), std::move(bytes));
    if (!encoded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "': ", encoded.status().message()));
    }
    chunk.encoded = *std::move(encoded);
  } else {
    RETURN_IF_ERROR(tensor::CheckWholeFloats(name, payload.bytes()));
    chunk.payload = std::move(payload);
  }
  const uint64_t total = push_.tensors[index].NumElements();
  if (offset != filled_[index]) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk of '", name, "' at offset ", offset, ", expected ", filled_[index]));
  }
  if (offset + chunk.size() > total) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name,
                                                   "' has the wrong length: data runs to ",
                                                   offset + chunk.size(), " of ", total));
  }
  if (chunk.encoded) {
    push_.max_magnitude = std::max(push_.max_magnitude, chunk.encoded->largest());
    filled_[index] += chunk.size();
    push_.payload_bytes += chunk.bytes();
    push_.chunks.push_back(std::move(chunk));
    return absl::OkStatus();
  }
  const rpc::ChunkPayload& values = chunk.payload;
  float largest = 0;
  absl::Status finite;
  values.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    if (!finite.ok()) return;
    float run_largest = 0;
    if (absl::Status checked = tensor::CheckFinite(run, &run_largest, first); !checked.ok()) {
      finite = absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': ", checked.message()));
      return;
    }
    largest = std::max(largest, run_largest);
  });
  RETURN_IF_ERROR(finite);
  push_.max_magnitude = std::max(push_.max_magnitude, largest);
  filled_[index] += chunk.size();
  push_.payload_bytes += chunk.bytes();
  push_.chunks.push_back(std::move(chunk));
  return absl::OkStatus();
}

absl::StatusOr<StagedPush> PushAssembler::Finish() {
  if (!have_header_) return absl::InvalidArgumentError("empty push stream");
  for (size_t i = 0; i < push_.tensors.size(); ++i) {
    if (filled_[i] != static_cast<uint64_t>(push_.tensors[i].NumElements())) {
      return absl::InvalidArgumentError(
          absl::StrCat("truncated stream: tensor '", push_.tensors[i].name, "' has ", filled_[i],
                       " of ", push_.tensors[i].NumElements(), " elements"));
    }
  }
  return std::move(push_);
}

}  // namespace syncopate::rpc
