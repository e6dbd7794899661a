#include "store/push_assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace syncopate::store {

absl::Status PushAssembler::Add(v1::PushMessage& message) {
  switch (message.kind_case()) {
    case v1::PushMessage::kHeader:
      return AddHeader(*message.mutable_header());
    case v1::PushMessage::kChunk:
      return AddChunk(*message.mutable_chunk());
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

absl::Status PushAssembler::AddChunk(v1::TensorChunk& chunk) {
  if (!have_header_) return absl::InvalidArgumentError("push stream must start with a header");
  auto named = index_.find(chunk.tensor());
  if (named == index_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk for tensor '", chunk.tensor(), "' that the header does not name"));
  }
  const size_t index = named->second;
  absl::Span<const float> values;
  RETURN_IF_ERROR(tensor::ChunkValues(chunk, &values));
  const uint64_t total = push_.tensors[index].NumElements();
  if (chunk.offset() != filled_[index]) {
    return absl::InvalidArgumentError(absl::StrCat("chunk of '", chunk.tensor(), "' at offset ",
                                                   chunk.offset(), ", expected ", filled_[index]));
  }
  if (chunk.offset() + values.size() > total) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", chunk.tensor(),
                                                   "' has the wrong length: data runs to ",
                                                   chunk.offset() + values.size(), " of ", total));
  }
  float largest = 0;
  absl::Status finite = tensor::CheckFinite(values, &largest);
  if (!finite.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", chunk.tensor(), "': ", finite.message()));
  }
  push_.max_magnitude = std::max(push_.max_magnitude, largest);
  filled_[index] += values.size();
  push_.payload_bytes += chunk.data().size();
  push_.chunks.push_back(StagedChunk{index, chunk.offset(), std::move(*chunk.mutable_data())});
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

}  // namespace syncopate::store
