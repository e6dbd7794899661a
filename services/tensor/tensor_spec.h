// Named float32 tensors as a process holds them: a tensor's name and shape, and a map of host
// values. Free of the wire format (tensor.h adds the protobuf conversions and the rules of the
// exchange), so code loaded as a plugin, such as the CUDA backend, can use it without bringing a
// second copy of the generated protobuf code into the process.
#ifndef SYNCOPATE_TENSOR_TENSOR_SPEC_H_
#define SYNCOPATE_TENSOR_TENSOR_SPEC_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace syncopate::tensor {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;

  // Product of the shape; 0 for an invalid shape (empty, a dimension below 1, or more elements
  // than int64 holds).
  int64_t NumElements() const;
  bool operator==(const TensorSpec& other) const {
    return name == other.name && shape == other.shape;
  }
};

// INVALID_ARGUMENT unless the name is non-empty and every dimension is positive.
absl::Status ValidateSpec(const TensorSpec& spec);

// A host-side model or delta: tensor name -> values. Ordered by name, so every process iterates the
// same tensors in the same order (checksums and chunk streams rely on it).
using TensorMap = std::map<std::string, std::vector<float>>;

// A model or delta several owners hold at once, never changed: a sender's zero-copy messages keep
// it alive until gRPC has sent them (rpc/chunk_frames.h).
using SharedTensorMap = std::shared_ptr<const TensorMap>;
inline SharedTensorMap Share(TensorMap values) {
  return std::make_shared<const TensorMap>(std::move(values));
}

}  // namespace syncopate::tensor

#endif  // SYNCOPATE_TENSOR_TENSOR_SPEC_H_
