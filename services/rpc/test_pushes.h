// Test helper: builds push streams and staged pushes from tensor maps.
#ifndef SYNCOPATE_RPC_TEST_PUSHES_H_
#define SYNCOPATE_RPC_TEST_PUSHES_H_

#include <vector>

#include "rpc/push_assembler.h"

namespace syncopate::rpc::testing {

inline std::vector<v1::PushMessage> PushStream(const v1::PushHeader& header,
                                               const tensor::TensorMap& tensors,
                                               uint32_t chunk_bytes = tensor::kMinChunkBytes) {
  std::vector<v1::PushMessage> stream(1);
  *stream[0].mutable_header() = header;
  for (const auto& [name, values] : tensors) {
    tensor::ToProto({name, {static_cast<int64_t>(values.size())}},
                    stream[0].mutable_header()->add_tensors());
  }
  for (const auto& [name, values] : tensors) {
    tensor::ForEachChunk(name, values, chunk_bytes, [&](const v1::TensorChunk& c) {
      v1::PushMessage m;
      *m.mutable_chunk() = c;
      stream.push_back(std::move(m));
    });
  }
  return stream;
}

inline v1::PushHeader Header(uint64_t trainer, uint64_t incarnation, uint64_t sequence,
                             v1::ApplyMode mode = v1::APPLY_MODE_IMMEDIATE, float weight = 1,
                             int64_t clock = 0) {
  v1::PushHeader h;
  h.set_trainer_id(trainer);
  h.set_incarnation(incarnation);
  h.set_sequence(sequence);
  h.set_apply_mode(mode);
  h.set_weight(weight);
  h.set_clock(clock);
  return h;
}

inline StagedPush Stage(const v1::PushHeader& header, const tensor::TensorMap& tensors) {
  PushAssembler assembler;
  for (v1::PushMessage& m : PushStream(header, tensors)) {
    if (!assembler.Add(m).ok()) std::abort();
  }
  return *assembler.Finish();
}

}  // namespace syncopate::rpc::testing

#endif  // SYNCOPATE_RPC_TEST_PUSHES_H_
