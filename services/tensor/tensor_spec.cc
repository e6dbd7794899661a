#include "tensor/tensor_spec.h"

#include "absl/strings/str_cat.h"

namespace syncopate::tensor {

int64_t TensorSpec::NumElements() const {
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0 || __builtin_mul_overflow(n, d, &n)) return 0;
  }
  return n;
}

absl::Status ValidateSpec(const TensorSpec& spec) {
  if (spec.name.empty()) return absl::InvalidArgumentError("tensor with an empty name");
  if (spec.NumElements() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", spec.name, "' has an invalid shape"));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::tensor
