#include "client/parameters.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace syncopate::client {

absl::Status BufferParameters::Check(const std::string& name,
                                     const std::vector<int64_t>& shape) const {
  if (absl::Status valid = tensor::ValidateSpec({name, shape}); !valid.ok()) return valid;
  for (const Buffer& b : buffers_) {
    if (b.spec.name == name) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' is registered twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status BufferParameters::Add(const std::string& name, const std::vector<int64_t>& shape,
                                   float* data) {
  if (data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' has no buffer"));
  }
  return Add(
      name, shape,
      [data](absl::Span<float> out) {
        std::memcpy(out.data(), data, out.size() * sizeof(float));
        return absl::OkStatus();
      },
      [data](absl::Span<const float> in) {
        std::memcpy(data, in.data(), in.size() * sizeof(float));
        return absl::OkStatus();
      });
}

absl::Status BufferParameters::Add(const std::string& name, const std::vector<int64_t>& shape,
                                   ReadFn read, WriteFn write) {
  if (absl::Status ok = Check(name, shape); !ok.ok()) return ok;
  if (!read || !write) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' needs both a read and a write callback"));
  }
  Buffer buffer{{name, shape}, std::move(read), std::move(write)};
  auto at = std::lower_bound(buffers_.begin(), buffers_.end(), name,
                             [](const Buffer& b, const std::string& n) { return b.spec.name < n; });
  buffers_.insert(at, std::move(buffer));
  return absl::OkStatus();
}

std::vector<tensor::TensorSpec> BufferParameters::Specs() const {
  std::vector<tensor::TensorSpec> specs;
  for (const Buffer& b : buffers_) specs.push_back(b.spec);
  return specs;
}

absl::Status BufferParameters::Read(tensor::TensorMap* out) const {
  out->clear();
  for (const Buffer& b : buffers_) {
    std::vector<float>& values = (*out)[b.spec.name];
    values.resize(static_cast<size_t>(b.spec.NumElements()));
    if (absl::Status read = b.read(absl::MakeSpan(values)); !read.ok()) return read;
  }
  return absl::OkStatus();
}

absl::Status BufferParameters::Write(const tensor::TensorMap& in) {
  // Check everything first: a bad entry must leave every buffer as it was.
  for (const auto& [tensor_name, values] : in) {
    const std::string& name = tensor_name;  // a lambda captures a reference, not a binding
    auto it = std::find_if(buffers_.begin(), buffers_.end(),
                           [&](const Buffer& b) { return b.spec.name == name; });
    if (it == buffers_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a parameter"));
    }
    if (static_cast<int64_t>(values.size()) != it->spec.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", name, "' has ", it->spec.NumElements(), " values, not ", values.size()));
    }
  }
  for (const Buffer& b : buffers_) {
    auto it = in.find(b.spec.name);
    if (it == in.end()) continue;
    if (absl::Status written = b.write(absl::MakeConstSpan(it->second)); !written.ok()) {
      return written;
    }
  }
  return absl::OkStatus();
}

}  // namespace syncopate::client
