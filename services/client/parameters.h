// The client library's view of a model: its trainable parameters as named float32 tensors that
// the library reads (to take a delta, to send a model) and overwrites (to load a pulled round, to
// rebase). The model itself stays the caller's: the built-in MLP/CNN through an adapter, or any
// framework's tensors registered as buffers (BufferParameters), which the library reads from and
// writes into where they are: the caller's memory is the model, not a copy the library keeps in
// step with it (the library's own copies are the base and deltas that LocalModel needs).
#ifndef SYNCOPATE_CLIENT_PARAMETERS_H_
#define SYNCOPATE_CLIENT_PARAMETERS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

// Not thread-safe: the library calls it from the caller's thread, between its steps.
class Parameters {
 public:
  virtual ~Parameters() = default;

  // Names and shapes, in name order; the same for the object's whole life.
  virtual std::vector<tensor::TensorSpec> Specs() const = 0;
  // Copies every parameter into `out`, replacing its contents. An error (a failed read callback,
  // say) leaves `out` unusable.
  virtual absl::Status Read(tensor::TensorMap* out) const = 0;
  // Overwrites the parameters named in `in`; the others stay as they are. INVALID_ARGUMENT
  // (nothing written) for a name that is not a parameter or a wrong element count; a write
  // callback's error as it is (the parameters before it are written).
  virtual absl::Status Write(const tensor::TensorMap& in) = 0;
};

// Parameters that live in the caller's memory, registered one by one. Every registered buffer
// must stay valid, and keep its size, for as long as the library uses this object; the caller
// must not change it while the library reads or writes it (the session does both between the
// caller's steps, on the caller's thread).
class BufferParameters final : public Parameters {
 public:
  // Copies a parameter's current values out into `out` (out.size() elements).
  using ReadFn = std::function<absl::Status(absl::Span<float> out)>;
  // Sets a parameter's values from `in` (in.size() elements).
  using WriteFn = std::function<absl::Status(absl::Span<const float> in)>;

  // Registers `data`, a buffer of shape `shape` in row-major order, as parameter `name`: the
  // library reads it and writes into it directly. INVALID_ARGUMENT (nothing registered) for an
  // empty or already registered name, a shape that is empty, has a dimension below 1 or more
  // elements than int64 holds, or a null `data`.
  absl::Status Add(const std::string& name, const std::vector<int64_t>& shape, float* data);
  // Registers a parameter reached through a pair of callbacks, for memory the library cannot
  // address (a GPU tensor staged through host memory, say). The errors of the other Add, and for
  // an empty callback.
  absl::Status Add(const std::string& name, const std::vector<int64_t>& shape, ReadFn read,
                   WriteFn write);

  std::vector<tensor::TensorSpec> Specs() const override;
  absl::Status Read(tensor::TensorMap* out) const override;
  absl::Status Write(const tensor::TensorMap& in) override;

 private:
  struct Buffer {
    tensor::TensorSpec spec;
    ReadFn read;
    WriteFn write;
  };
  absl::Status Check(const std::string& name, const std::vector<int64_t>& shape) const;

  std::vector<Buffer> buffers_;  // in name order
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PARAMETERS_H_
