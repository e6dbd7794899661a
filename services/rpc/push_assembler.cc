#include "rpc/push_assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/chunk_frames.h"

namespace syncopate::rpc {

void StagedChunk::AddTo(float* values, float scale) const {
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    tensor::ScaledAdd(values + offset + first, run, scale);
  });
}

void StagedChunk::ScaledCopyTo(float* values, float scale) const {
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats run) {
    tensor::ScaledCopy(values + offset + first, run, scale);
  });
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
  RETURN_IF_ERROR(tensor::CheckWholeFloats(name, payload.bytes()));
  const uint64_t total = push_.tensors[index].NumElements();
  if (offset != filled_[index]) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk of '", name, "' at offset ", offset, ", expected ", filled_[index]));
  }
  if (offset + payload.size() > total) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name,
                                                   "' has the wrong length: data runs to ",
                                                   offset + payload.size(), " of ", total));
  }
  float largest = 0;
  absl::Status finite;
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats values) {
    if (!finite.ok()) return;
    float run_largest = 0;
    if (absl::Status run = tensor::CheckFinite(values, &run_largest, first); !run.ok()) {
      finite = absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': ", run.message()));
      return;
    }
    largest = std::max(largest, run_largest);
  });
  RETURN_IF_ERROR(finite);
  push_.max_magnitude = std::max(push_.max_magnitude, largest);
  filled_[index] += payload.size();
  push_.payload_bytes += payload.bytes();
  push_.chunks.push_back(StagedChunk{index, offset, std::move(payload)});
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
