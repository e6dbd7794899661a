#include "client/chunk_writer.h"

#include <algorithm>

#include "rpc/chunk_frames.h"
#include "tensor/compression.h"

namespace syncopate::client {

bool WriteChunks(grpc::internal::WriterInterface<grpc::ByteBuffer>& writer,
                 const tensor::SharedTensorMap& model, const TensorEntries& tensors,
                 uint32_t chunk_bytes, const std::function<bool(size_t bytes)>& before,
                 uint64_t* written, v1::Codec codec) {
  bool ok = true;
  if (codec != v1::CODEC_NONE) {
    const size_t per_chunk = tensor::ChunkElements(codec, chunk_bytes);
    for (const auto* entry : tensors) {
      const std::vector<float>& values = entry->second;
      for (size_t offset = 0; ok && offset < values.size(); offset += per_chunk) {
        v1::PushMessage message;
        v1::TensorChunk* chunk = message.mutable_chunk();
        chunk->set_tensor(entry->first);
        chunk->set_offset(offset);
        tensor::EncodeChunk(codec, values.data() + offset,
                            std::min(per_chunk, values.size() - offset), chunk->mutable_data());
        const size_t bytes = chunk->data().size();
        if (before && !before(bytes)) return false;
        ok = writer.Write(rpc::EncodeMessage(message));
        if (ok && written != nullptr) *written += bytes;
      }
      if (!ok) break;
    }
    return ok;
  }
  for (const auto* entry : tensors) {
    if (!ok) break;
    const absl::Span<const float> values = entry->second;
    tensor::ForEachChunkRange(values.size(), chunk_bytes, [&](size_t offset, size_t count) {
      if (!ok) return;
      const size_t bytes = count * sizeof(float);
      if (before && !before(bytes)) {
        ok = false;
        return;
      }
      ok = writer.Write(
          rpc::EncodeChunkMessage(entry->first, offset, values.subspan(offset, count), model));
      if (ok && written != nullptr) *written += bytes;
    });
  }
  return ok;
}

TensorEntries AllEntries(const tensor::TensorMap& model) {
  TensorEntries entries;
  entries.reserve(model.size());
  for (const auto& entry : model) entries.push_back(&entry);
  return entries;
}

void AddSpecs(const TensorEntries& tensors, v1::PushHeader* header) {
  for (const auto* entry : tensors) {
    tensor::ToProto({entry->first, {static_cast<int64_t>(entry->second.size())}},
                    header->add_tensors());
  }
}

}  // namespace syncopate::client
