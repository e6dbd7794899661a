// libFuzzer target: PushAssembler, the first code a Push or Initialize stream reaches in the store,
// and a peer's model in a trainer's Peer service. Input: one byte choosing the stream's kind (even:
// a Push checked against FuzzModel's shapes; odd: an Initialize, whose header defines the shapes;
// bits 1-4, k: each message arrives in one slice (0) or in slices of 2^(k-1) bytes; bit 5: chunk
// payloads stay in the slices, as a large model's do (1), or are copied out, as small ones are),
// then the stream's messages (fuzz_input.h), which reach the assembler raw, as the services read
// them.
// Beyond not crashing: a stream it accepts is whole. The seeds include compressed pushes in every
// codec (tensor/compression.h).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "client/peer_exchange.h"
#include "fuzz_input.h"
#include "rpc/byte_buffer_testing.h"
#include "rpc/chunk_frames.h"
#include "rpc/push_assembler.h"

namespace syncopate::fuzz {
namespace {

// Every tensor of the header covered once, in order, by finite values; the totals right.
void RequireWhole(const rpc::StagedPush& push) {
  Require(push.header.tensors_size() == 0, "the header's tensors are moved out");
  std::vector<uint64_t> filled(push.tensors.size(), 0);
  uint64_t bytes = 0;
  float largest = 0;
  for (const rpc::StagedChunk& chunk : push.chunks) {
    Require(chunk.tensor_index < push.tensors.size(), "a chunk names a tensor of the push");
    Require(chunk.encoded.has_value() == (push.header.codec() != v1::CODEC_NONE),
            "a compressed push's chunks, and only those, are kept encoded");
    Require(chunk.encoded || chunk.payload.bytes() % sizeof(float) == 0,
            "a chunk holds whole floats");
    Require(chunk.offset == filled[chunk.tensor_index], "a tensor's chunks follow each other");
    filled[chunk.tensor_index] += chunk.size();
    bytes += chunk.bytes();
    // The values the chunk adds, decoded as the store applies them.
    std::vector<float> values(chunk.offset + chunk.size());
    chunk.ScaledCopyTo(values.data(), 1.0f);
    values.erase(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(chunk.offset));
    for (float value : values) {
      Require(std::isfinite(value), "every value is finite");
      largest = std::max(largest, std::fabs(value));
    }
  }
  for (size_t t = 0; t < push.tensors.size(); ++t) {
    Require(push.tensors[t].NumElements() > 0, "every tensor has a valid shape");
    Require(filled[t] == static_cast<uint64_t>(push.tensors[t].NumElements()),
            "every tensor is covered exactly");
  }
  Require(bytes == push.payload_bytes, "payload_bytes counts the chunks' bytes");
  Require(largest == push.max_magnitude, "max_magnitude is the largest |value|");
}

}  // namespace
}  // namespace syncopate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace syncopate;
  if (size == 0) return 0;
  const bool initialize = data[0] & 1;
  const int cut = (data[0] >> 1) % 16;  // 0: each message in one slice
  const auto slice_bytes = [cut](const std::string& m) {
    return cut == 0 ? std::max<size_t>(m.size(), 1) : size_t{1} << (cut - 1);
  };
  static const tensor::TensorMap model = fuzz::FuzzModel();
  const size_t copy_below = (data[0] & 0x20) ? 0 : rpc::kCopyKeptPayloadsBelow;
  rpc::PushAssembler assembler(initialize ? nullptr : client::ShapeLookup(model), copy_below);
  for (const std::string& message : fuzz::DecodeRawStream(data + 1, size - 1)) {
    const size_t every = slice_bytes(message);
    if (!assembler.Add(rpc::testing::Cut(message, every, every)).ok()) return 0;
  }
  absl::StatusOr<rpc::StagedPush> push = assembler.Finish();
  if (push.ok()) fuzz::RequireWhole(*push);
  return 0;
}
