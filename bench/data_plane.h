// What the data-plane benchmarks (store_bench.cc, tls_bench.cc) share: their flags, the model they
// move, the push that moves it, and the median they report.
#ifndef SYNCOPATE_BENCH_DATA_PLANE_H_
#define SYNCOPATE_BENCH_DATA_PLANE_H_

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "syncopate/v1/store.pb.h"
#include "tensor/tensor.h"

namespace syncopate::bench {

// --mib=N (model size, default 64), --repeats=N (default 5), --round-trainers=N (default 5).
struct DataPlaneFlags {
  size_t mib = 64;
  int repeats = 5;
  // Trainers whose ROUND pushes one round closes (store_bench.cc's round section).
  int round_trainers = 5;
  // Only push+pull in the timed repeats (after one untimed warm-up), the other measurements after
  // them: the work a peer's bench does, for side-by-side comparisons (bench/pslite/compare.sh).
  bool transfer_only = false;
  size_t floats() const { return mib * (1 << 20) / sizeof(float); }
  size_t bytes() const { return floats() * sizeof(float); }
};

inline DataPlaneFlags ParseDataPlaneFlags(int argc, char** argv) {
  DataPlaneFlags flags;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--mib=", 6) == 0) flags.mib = std::stoul(argv[i] + 6);
    if (std::strncmp(argv[i], "--repeats=", 10) == 0) flags.repeats = std::stoi(argv[i] + 10);
    if (std::strcmp(argv[i], "--transfer-only") == 0) flags.transfer_only = true;
    if (std::strncmp(argv[i], "--round-trainers=", 17) == 0) {
      flags.round_trainers = std::max(1, std::stoi(argv[i] + 17));
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
