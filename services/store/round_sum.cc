#include "store/round_sum.h"

#include <cmath>
#include <new>

namespace syncopate::store {

void RoundSum::Add(const rpc::StagedPush& push) {
  if (!valid_) return;
  const float weight = push.header.weight();
  const double bound = bound_ + std::fabs(static_cast<double>(weight)) * push.max_magnitude;
  if (!(bound < limit_)) {
    Invalidate();
    return;
  }
  // Every allocation before the first write: one that fails leaves the sum as it was.
  std::vector<Accumulator*> targets;
  try {
    targets.reserve(push.tensors.size());
    for (const tensor::TensorSpec& spec : push.tensors) {
      Accumulator& accumulator = tensors_[spec.name];
      const size_t n = static_cast<size_t>(spec.NumElements());
      if (!accumulator.holds && (!accumulator.values || accumulator.values->size() != n)) {
        accumulator.values = buffers_.Take(n);
      }
      targets.push_back(&accumulator);
    }
  } catch (const std::bad_alloc&) {
    Invalidate();
    return;
  }
  for (const rpc::StagedChunk& chunk : push.chunks) {
    Accumulator& accumulator = *targets[chunk.tensor_index];
    if (accumulator.holds) {
      chunk.AddTo(accumulator.values->data(), weight);
    } else {
      chunk.ScaledCopyTo(accumulator.values->data(), weight);
    }
  }
  for (Accumulator* accumulator : targets) accumulator->holds = true;
  bound_ = bound;
  ++pushes_;
}

void RoundSum::Reset() {
  for (auto& [name, accumulator] : tensors_) accumulator.holds = false;
  valid_ = true;
  pushes_ = 0;
  bound_ = 0;
}

void RoundSum::Invalidate() {
  valid_ = false;
  tensors_.clear();
}

const std::vector<float>* RoundSum::Of(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() || !it->second.holds ? nullptr : it->second.values.get();
}

TensorBuffers::Buffer RoundSum::Take(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end() || !it->second.holds) return nullptr;
  it->second.holds = false;
  return std::move(it->second.values);
}

}  // namespace syncopate::store
