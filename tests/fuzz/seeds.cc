// Writes the fuzz targets' seed corpus: streams, checkpoints and values as the unit tests make them
// (rpc/test_pushes.h), in each target's input format. Usage: fuzz_seeds DIR (DIR/<target>/...).

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fuzz_input.h"
#include "rpc/test_pushes.h"
#include "store/checkpoint.h"
#include "tensor/compression.h"

namespace syncopate::fuzz {
namespace {

using rpc::testing::Header;
using rpc::testing::PushStream;
using rpc::testing::Stage;

class SeedWriter {
 public:
  explicit SeedWriter(std::filesystem::path dir) : dir_(std::move(dir)) {}

  void Write(const std::string& target, const std::string& name, const std::string& bytes) {
    std::filesystem::create_directories(dir_ / target);
    std::ofstream(dir_ / target / name, std::ios::binary) << bytes;
  }

 private:
  std::filesystem::path dir_;
};

std::string Uint16(size_t n) { return {static_cast<char>(n & 0xff), static_cast<char>(n >> 8)}; }
std::string Short(const std::string& s) { return static_cast<char>(s.size()) + s; }
std::string Long(const std::string& s) { return Uint16(s.size()) + s; }

// A stream whose tensors come in chunks of `per_chunk` values (the senders' chunks are at least
// 64 KiB, larger than the fuzz model).
std::vector<v1::PushMessage> ChunkedStream(const v1::PushHeader& header,
                                           const tensor::TensorMap& model, size_t per_chunk) {
  std::vector<v1::PushMessage> stream(1, PushStream(header, model)[0]);
  for (const auto& [name, values] : model) {
    for (size_t offset = 0; offset < values.size(); offset += per_chunk) {
      const size_t n = std::min(per_chunk, values.size() - offset);
      v1::TensorChunk* chunk = stream.emplace_back().mutable_chunk();
      chunk->set_tensor(name);
      chunk->set_offset(offset);
      chunk->set_data(reinterpret_cast<const char*>(values.data() + offset), n * sizeof(float));
    }
  }
  return stream;
}

void WritePushSeeds(SeedWriter& out) {
  const tensor::TensorMap model = FuzzModel();
  const std::string push = EncodeStream(PushStream(Header(1, 1, 1), model));
  out.Write("push_assembler_fuzz", "push", '\0' + push);
  out.Write("push_assembler_fuzz", "initialize", '\1' + push);
  out.Write("push_assembler_fuzz", "chunked",
            '\0' + EncodeStream(ChunkedStream(Header(2, 1, 7), model, 16)));
  // Payloads left in slices of 8 bytes (bit 5; bits 1-4 = 4: 2^3-byte slices).
  out.Write(
      "push_assembler_fuzz", "chunked-in-slices",
      static_cast<char>(0x20 | (4 << 1)) + EncodeStream(ChunkedStream(Header(2, 1, 7), model, 16)));
  std::vector<v1::PushMessage> truncated = ChunkedStream(Header(2, 1, 8), model, 16);
  truncated.pop_back();
  out.Write("push_assembler_fuzz", "truncated", '\0' + EncodeStream(truncated));
  // Compressed pushes (tensor/compression.h), chunks of 16 elements in each codec.
  for (const char* name : {"bf16", "fp16", "topk:0.25"}) {
    const tensor::Compression compression = *tensor::ParseCompression(name);
    tensor::TensorMap quantized = model;
    for (auto& [tensor, values] : quantized) tensor::Quantize(compression, values);
    v1::PushHeader header = Header(3, 1, 9);
    header.set_codec(compression.codec);
    std::vector<v1::PushMessage> stream(1, PushStream(header, quantized)[0]);
    for (const auto& [tensor, values] : quantized) {
      for (size_t offset = 0; offset < values.size(); offset += 16) {
        v1::TensorChunk* chunk = stream.emplace_back().mutable_chunk();
        chunk->set_tensor(tensor);
        chunk->set_offset(offset);
        tensor::EncodeChunk(compression.codec, values.data() + offset,
                            std::min<size_t>(16, values.size() - offset), chunk->mutable_data());
      }
    }
    out.Write("push_assembler_fuzz", std::string("compressed-") + std::string(name).substr(0, 4),
              '\0' + EncodeStream(stream));
  }
}

void WriteCheckpointSeeds(SeedWriter& out) {
  store::ParameterTable table;
  table.SetMembers({{1, 1}, {2, 1}});
  if (!table.Initialize(Stage(Header(1, 1, 0), FuzzModel())).ok()) std::abort();
  auto round_push = [](uint64_t trainer, uint64_t sequence, float value) {
    return Stage(Header(trainer, 1, sequence, v1::APPLY_MODE_ROUND, 1, 1),
                 {{"b", std::vector<float>(4, value)}});
  };
  if (!table.Apply(round_push(1, 1, 0.25f)).ok()) std::abort();
  auto write = [&](const std::string& name) {
    absl::StatusOr<std::string> file =
        store::EncodeCheckpoint({table.Durable(), absl::FromUnixSeconds(1700000000)}, 0, 1);
    if (!file.ok()) std::abort();
    out.Write("checkpoint_fuzz", name, '\0' + *file);
    // Odd: the target appends a checksum again, which the file's last field overrides.
    out.Write("checkpoint_fuzz", name + "-sealed", '\1' + *file);
  };
  write("pending");
  if (!table.Apply(round_push(2, 1, -0.5f)).ok()) std::abort();
  if (!table.CloseRound({1, {{{1, 1}, 1}, {{2, 1}, 1}}, v1::AGGREGATION_MEAN, 1.0}).ok()) {
    std::abort();
  }
  write("closed");
}

void WritePeerInboxSeeds(SeedWriter& out) {
  const tensor::TensorMap model = FuzzModel();
  auto deposit = [&](uint64_t sender, int64_t round, const std::string& caller) {
    v1::PushHeader header = Header(sender, 1, 1, v1::APPLY_MODE_NONE, 1, round);
    return '\0' + Short(caller) + Long(EncodeStream(ChunkedStream(header, model, 16)));
  };
  // Names trainer 1 "trainer-1" (case 4: names only, round 3, one peer); as round 3's plan, with
  // \0 instead of the first \1.
  const std::string name_peer = std::string("\4\1\3\1") + '\1' + Short("trainer-1");
  const std::string plan = std::string("\4") + '\0' + "\3\1\1" + Short("trainer-1");
  const std::string collect = std::string("\1\3\2") + '\1' + '\2';
  out.Write("peer_inbox_fuzz", "collect", deposit(1, 3, "trainer-1") + deposit(2, 3, "") + collect);
  out.Write("peer_inbox_fuzz", "named",
            deposit(1, 3, "impostor") + name_peer + deposit(1, 3, "trainer-1") + collect);
  out.Write("peer_inbox_fuzz", "planned",
            deposit(2, 3, "") + plan + deposit(2, 3, "") + deposit(1, 3, "trainer-1") + collect);
  out.Write("peer_inbox_fuzz", "latest",
            deposit(1, 4, "") + deposit(1, 5, "") + std::string("\3\2") + "\2");
}

void WriteTensorSeeds(SeedWriter& out) {
  v1::TensorSpec spec;
  tensor::ToProto({"w", {3, 4}}, &spec);
  const std::vector<float> values = FuzzModel().at("w");
  v1::TensorChunk chunk;
  tensor::ForEachChunk("w", values, tensor::kMinChunkBytes, [&](v1::TensorChunk& c) { chunk = c; });
  out.Write("tensor_fuzz", "w",
            Long(spec.SerializeAsString()) + Long(chunk.SerializeAsString()) + Uint16(1024));
}

void WriteFlagSeeds(SeedWriter& out) {
  const char* texts[] = {"90s",
                         "1m30s",
                         "250ms",
                         "100mbit",
                         "12MB",
                         "800kbps",
                         "1,1,2,4",
                         "a:1,b:2",
                         "spiffe://syncopate.local/syncopate/trainer/trainer-0",
                         "spiffe://syncopate.local/syncopate/store"};
  int n = 0;
  for (const char* text : texts) out.Write("flags_fuzz", "text-" + std::to_string(n++), text);
}

}  // namespace
}  // namespace syncopate::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  syncopate::fuzz::SeedWriter out(argv[1]);
  syncopate::fuzz::WritePushSeeds(out);
  syncopate::fuzz::WriteCheckpointSeeds(out);
  syncopate::fuzz::WritePeerInboxSeeds(out);
  syncopate::fuzz::WriteTensorSeeds(out);
  syncopate::fuzz::WriteFlagSeeds(out);
  return 0;
}
