// Fashion-MNIST (or any MNIST-format IDX pair) in memory, a trainer's disjoint shard of it, and
// shuffled minibatches.
#ifndef SYNCOPATE_DATA_DATASET_H_
#define SYNCOPATE_DATA_DATASET_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace syncopate::data {

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr char kDefaultFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

struct Dataset {
  int features = 0;             // pixels per image
  std::vector<float> images;    // size() * features values in [0, 1], row-major
  std::vector<int32_t> labels;  // class per image

  size_t size() const { return labels.size(); }
  const float* image(size_t i) const { return images.data() + i * features; }
};

// Reads a gzipped (or plain) IDX image file and its label file. INVALID_ARGUMENT for a bad magic
// number, mismatched counts or a short file; NOT_FOUND when a file is missing.
absl::StatusOr<Dataset> LoadIdx(const std::string& images_path, const std::string& labels_path);

// The "train" or "test" split of Fashion-MNIST under `dir`.
absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split);

// Examples i with i % world == rank: disjoint across ranks and together the whole set.
// INVALID_ARGUMENT unless 0 <= rank < world.
absl::StatusOr<Dataset> Shard(const Dataset& full, int rank, int world);

// Visits a dataset in shuffled minibatches, reshuffling each epoch. Deterministic for a seed.
class BatchSampler {
 public:
  BatchSampler(size_t dataset_size, int batch_size, uint64_t seed);
  // Copies the next batch into `x` (batch * features) and `y`; returns the batch size used.
  int Next(const Dataset& data, std::vector<float>* x, std::vector<int32_t>* y);

 private:
  std::vector<size_t> order_;
  size_t cursor_ = 0;
  int batch_size_;
  std::mt19937_64 rng_;
};

}  // namespace syncopate::data

#endif  // SYNCOPATE_DATA_DATASET_H_
