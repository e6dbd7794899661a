#include "data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace syncopate::data {
namespace {

// Reads a whole (optionally gzipped) file through zlib.
absl::StatusOr<std::string> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) data.append(buf, n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return absl::InvalidArgumentError(absl::StrCat("corrupt gzip file ", path));
  return data;
}

uint32_t BigEndian32(const std::string& s, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

absl::StatusOr<Dataset> LoadIdx(const std::string& images_path, const std::string& labels_path) {
  ASSIGN_OR_RETURN(std::string images, ReadGz(images_path));
  ASSIGN_OR_RETURN(std::string labels, ReadGz(labels_path));
  if (images.size() < 16 || BigEndian32(images, 0) != 0x803) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " is not an IDX image file"));
  }
  if (labels.size() < 8 || BigEndian32(labels, 0) != 0x801) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, " is not an IDX label file"));
  }
  const size_t count = BigEndian32(images, 4);
  const size_t features = size_t{BigEndian32(images, 8)} * BigEndian32(images, 12);
  if (BigEndian32(labels, 4) != count) {
    return absl::InvalidArgumentError("image and label files disagree on the example count");
  }
  if (images.size() < 16 + count * features || labels.size() < 8 + count) {
    return absl::InvalidArgumentError("IDX file shorter than its header says");
  }
  Dataset d;
  d.features = static_cast<int>(features);
  d.images.resize(count * features);
  for (size_t i = 0; i < count * features; ++i) {
    d.images[i] = static_cast<unsigned char>(images[16 + i]) / 255.0f;
  }
  d.labels.resize(count);
  for (size_t i = 0; i < count; ++i) d.labels[i] = static_cast<unsigned char>(labels[8 + i]);
  return d;
}

absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown split '", split, "'"));
  }
  return LoadIdx(absl::StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz"),
                 absl::StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz"));
}

absl::StatusOr<Dataset> Shard(const Dataset& full, int rank, int world) {
  if (world <= 0 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(absl::StrCat("bad shard: rank ", rank, " of ", world));
  }
  Dataset d;
  d.features = full.features;
  for (size_t i = rank; i < full.size(); i += world) {
    d.images.insert(d.images.end(), full.image(i), full.image(i) + full.features);
    d.labels.push_back(full.labels[i]);
  }
  return d;
}

BatchSampler::BatchSampler(size_t dataset_size, int batch_size, uint64_t seed)
    : order_(dataset_size), cursor_(dataset_size), batch_size_(batch_size), rng_(seed) {
  std::iota(order_.begin(), order_.end(), 0);
}

int BatchSampler::Next(const Dataset& data, std::vector<float>* x, std::vector<int32_t>* y) {
  const int n = static_cast<int>(std::min<size_t>(batch_size_, order_.size()));
  x->resize(static_cast<size_t>(n) * data.features);
  y->resize(n);
  for (int b = 0; b < n; ++b) {
    if (cursor_ >= order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      cursor_ = 0;
    }
    const size_t i = order_[cursor_++];
    std::memcpy(x->data() + static_cast<size_t>(b) * data.features, data.image(i),
                data.features * sizeof(float));
    (*y)[b] = data.labels[i];
  }
  return n;
}

}  // namespace syncopate::data
