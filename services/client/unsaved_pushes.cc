#include "client/unsaved_pushes.h"

#include <algorithm>

namespace syncopate::client {

void UnsavedPushes::Add(int64_t epoch, uint64_t sequence, int64_t clock, float weight,
                        const tensor::TensorMap& delta,
                        const std::vector<const std::string*>& names) {
  PushSum& sum = by_epoch_[epoch];
  sum.last_sequence = std::max(sum.last_sequence, sequence);
  sum.last_clock = std::max(sum.last_clock, clock);
  ++sum.pushes;
  for (const std::string* name : names) {
    auto it = delta.find(*name);
    if (it == delta.end()) continue;
    const std::vector<float>& values = it->second;
    std::vector<float>& acc = sum.sum[*name];
    if (acc.empty()) acc.assign(values.size(), 0.0f);
    for (size_t i = 0; i < values.size() && i < acc.size(); ++i) acc[i] += weight * values[i];
  }
}

void UnsavedPushes::Release(int64_t durable_epoch) {
  by_epoch_.erase(by_epoch_.begin(), by_epoch_.lower_bound(durable_epoch));
}

void UnsavedPushes::LoseFrom(int64_t restored_epoch) {
  Release(restored_epoch);
  for (auto& [epoch, sum] : by_epoch_) resend_.push_back(std::move(sum));
  by_epoch_.clear();
}

}  // namespace syncopate::client
