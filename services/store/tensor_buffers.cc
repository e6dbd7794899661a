#include "store/tensor_buffers.h"

#include <algorithm>
#include <utility>

namespace syncopate::store {

TensorBuffers::TensorBuffers(size_t max_kept_bytes) : kept_(std::make_shared<Kept>()) {
  SetMaxKeptBytes(max_kept_bytes);
}

void TensorBuffers::GiveBack::operator()(std::vector<float>* values) const {
  std::unique_ptr<std::vector<float>> owned(values);
  std::shared_ptr<Kept> pool = kept.lock();
  if (!pool || values->empty()) return;
  const size_t bytes = values->size() * sizeof(float);
  absl::MutexLock lock(&pool->mu);
  if (pool->bytes + bytes > pool->max_bytes) return;
  pool->bytes += bytes;
  pool->by_size[values->size()].push_back(std::move(*values));
}

TensorBuffers::Buffer TensorBuffers::Wrap(std::vector<float> values) const {
  return Buffer(new std::vector<float>(std::move(values)), GiveBack{kept_});
}

TensorBuffers::Buffer TensorBuffers::Take(size_t n) {
  {
    absl::MutexLock lock(&kept_->mu);
    auto it = kept_->by_size.find(n);
    if (it != kept_->by_size.end() && !it->second.empty()) {
      std::vector<float> values = std::move(it->second.back());
      it->second.pop_back();
      kept_->bytes -= n * sizeof(float);
      return Wrap(std::move(values));
    }
  }
  return Wrap(std::vector<float>(n));
}

TensorBuffers::Buffer TensorBuffers::Copy(const std::vector<float>& from) {
  Buffer buffer = Take(from.size());
  std::copy(from.begin(), from.end(), buffer->begin());
  return buffer;
}

void TensorBuffers::SetMaxKeptBytes(size_t max_kept_bytes) {
  absl::MutexLock lock(&kept_->mu);
  kept_->max_bytes = max_kept_bytes;
  for (auto it = kept_->by_size.begin();
       it != kept_->by_size.end() && kept_->bytes > max_kept_bytes; ++it) {
    while (!it->second.empty() && kept_->bytes > max_kept_bytes) {
      kept_->bytes -= it->second.back().size() * sizeof(float);
      it->second.pop_back();
    }
  }
}

size_t TensorBuffers::kept_bytes() const {
  absl::MutexLock lock(&kept_->mu);
  return kept_->bytes;
}

}  // namespace syncopate::store
