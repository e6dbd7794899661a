// Writes a model's tensors on a client stream of PushMessages (a store's Push or Initialize, a
// peer's Exchange) without copying them: each chunk is a slice of the model's memory
// (rpc/chunk_frames.h), cut by tensor::ForEachChunkRange.
#ifndef SYNCOPATE_CLIENT_CHUNK_WRITER_H_
#define SYNCOPATE_CLIENT_CHUNK_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {

// Entries of one model, in the order they are written.
using TensorEntries = std::vector<const tensor::TensorMap::value_type*>;

// Writes the chunks of `tensors` (entries of `model`, which the messages hold until gRPC has sent
// them) in order. `before(bytes)`, when given, runs before each chunk of `bytes` payload bytes goes
// (pacing, a cancel check); false stops the writing. False when `before` stopped it or a write
// failed (the stream broke: its Finish says why). The payload bytes written go to `written`.
// Under a `codec` other than CODEC_NONE each chunk is encoded (tensor/compression.h) from values
// already quantized for it, into a buffer of its own; CODEC_NONE writes the model's memory as it
// is.
bool WriteChunks(grpc::internal::WriterInterface<grpc::ByteBuffer>& writer,
                 const tensor::SharedTensorMap& model, const TensorEntries& tensors,
                 uint32_t chunk_bytes, const std::function<bool(size_t bytes)>& before,
                 uint64_t* written = nullptr, v1::Codec codec = v1::CODEC_NONE);

// Every entry of `model`, in its order.
TensorEntries AllEntries(const tensor::TensorMap& model);

// Names `tensors` (their specs, in order) in a push stream's header, which WriteChunks follows.
void AddSpecs(const TensorEntries& tensors, v1::PushHeader* header);

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_CHUNK_WRITER_H_
