// What the data-plane benchmarks (store_bench.cc, tls_bench.cc) share: their flags, the model they
// move, the push that moves it, and the median they report.
#ifndef SYNCOPATE_BENCH_DATA_PLANE_H_
#define SYNCOPATE_BENCH_DATA_PLANE_H_

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::bench {

// --mib=N or --kib=N (model size, default 64 MiB), --repeats=N (default 5), --round-trainers=N
// (default 5), --transport=stream|call, --transfer-only, --chunk-kib=N (default 1024).
struct DataPlaneFlags {
  size_t kib = 64 << 10;
  int repeats = 5;
  // Trainers whose ROUND pushes one round closes (store_bench.cc's round section).
  int round_trainers = 5;
  // Only push+pull in the timed repeats (after one untimed warm-up), the other measurements after
  // them: the work a peer's bench does, for side-by-side comparisons (bench/pslite/compare.sh).
  bool transfer_only = false;
  // Pushes and pulls on the trainer's Transfer stream (default), or a call each (--transport=call).
  bool call_per_transfer = false;
  // The chunk size of pushes and pulls (the store clamps a pull's to [64 KiB, 4 MiB]).
  uint32_t chunk_bytes = tensor::kDefaultChunkBytes;
  double mib() const { return kib / 1024.0; }
  size_t floats() const { return kib * 1024 / sizeof(float); }
  size_t bytes() const { return floats() * sizeof(float); }
};

// Parses the flags; --help prints `usage` and exits 0, anything else unknown exits 2 with it.
inline DataPlaneFlags ParseDataPlaneFlags(int argc, char** argv, const char* usage) {
  DataPlaneFlags flags;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
      std::printf("%s", usage);
      std::exit(0);
    } else if (std::strncmp(arg, "--mib=", 6) == 0) {
      flags.kib = std::stoul(arg + 6) << 10;
    } else if (std::strncmp(arg, "--kib=", 6) == 0) {
      flags.kib = std::max<size_t>(1, std::stoul(arg + 6));
    } else if (std::strncmp(arg, "--repeats=", 10) == 0) {
      flags.repeats = std::stoi(arg + 10);
    } else if (std::strcmp(arg, "--transport=call") == 0) {
      flags.call_per_transfer = true;
    } else if (std::strcmp(arg, "--transport=stream") == 0) {
      flags.call_per_transfer = false;
    } else if (std::strncmp(arg, "--chunk-kib=", 12) == 0) {
      flags.chunk_bytes = static_cast<uint32_t>(std::clamp(std::stoul(arg + 12), 64ul, 4096ul))
                          << 10;
    } else if (std::strcmp(arg, "--transfer-only") == 0) {
      flags.transfer_only = true;
    } else if (std::strncmp(arg, "--round-trainers=", 17) == 0) {
      flags.round_trainers = std::max(1, std::stoi(arg + 17));
    } else {
      std::fprintf(stderr, "unknown argument %s\n%s", arg, usage);
      std::exit(2);
    }
  }
  return flags;
}

// A model of `floats` values in four tensors, as a real one has several.
inline tensor::TensorMap FourTensorModel(size_t floats) {
  tensor::TensorMap model;
  for (int t = 0; t < 4; ++t) {
    model["layer" + std::to_string(t)] = std::vector<float>(floats / 4, 0.01f);
  }
  return model;
}

// An immediate push of weight 1 by trainer 1, incarnation 1 (sequence 0: an initialization).
inline v1::PushHeader TrainerOneHeader() {
  v1::PushHeader header;
  header.set_trainer_id(1);
  header.set_incarnation(1);
  header.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
  header.set_weight(1);
  return header;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace syncopate::bench

#endif  // SYNCOPATE_BENCH_DATA_PLANE_H_
