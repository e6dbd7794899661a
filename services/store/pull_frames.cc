#include "store/pull_frames.h"

#include "rpc/chunk_frames.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::store {

PullFrames::PullFrames(std::shared_ptr<const ModelSnapshot> snapshot, uint32_t chunk_bytes)
    : snapshot_(std::move(snapshot)) {
  for (size_t t = 0; t < snapshot_->values.size(); ++t) {
    tensor::ForEachChunkRange(snapshot_->tensor(t).size(), chunk_bytes,
                              [&](size_t offset, size_t count) {
                                chunks_.push_back({t, offset, count});
                              });
  }
}

bool PullFrames::Next(grpc::ByteBuffer* message) {
  if (!header_sent_) {
    header_sent_ = true;
    v1::PullMessage header_message;
    v1::PullHeader* header = header_message.mutable_header();
    header->set_live_version(snapshot_->live_version);
    header->set_round(snapshot_->round);
    header->set_checksum(snapshot_->checksum);
    for (const tensor::TensorSpec& spec : snapshot_->specs) {
      tensor::ToProto(spec, header->add_tensors());
    }
    *message = rpc::EncodeMessage(header_message);
    return true;
  }
  if (next_ >= chunks_.size()) {
    snapshot_.reset();
    return false;
  }
  const Chunk& c = chunks_[next_++];
  *message = rpc::EncodeChunkMessage(
      snapshot_->specs[c.tensor].name, c.offset,
      absl::MakeConstSpan(snapshot_->tensor(c.tensor)).subspan(c.offset, c.count), snapshot_);
  bytes_ += c.count * sizeof(float);
  return true;
}

}  // namespace syncopate::store
