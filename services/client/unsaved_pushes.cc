#include "client/unsaved_pushes.h"

#include <algorithm>
#include <limits>

#include "absl/types/span.h"
#include "tensor/tensor.h"

namespace syncopate::client {

int UnsavedPushes::Add(uint64_t incarnation, int64_t epoch, uint64_t sequence, int64_t clock,
                       float weight, bool round, const tensor::TensorMap& delta,
                       const std::vector<const std::string*>& names, int pushes) {
  PushSum& sum = by_epoch_[{incarnation, epoch}];
  sum.last_sequence = std::max(sum.last_sequence, sequence);
  sum.last_clock = std::max(sum.last_clock, clock);
  sum.pushes += pushes;
  sum.round = round;
  sum.weight_sum += weight;
  for (const std::string* name : names) {
    auto it = delta.find(*name);
    if (it == delta.end()) continue;
    const std::vector<float>& values = it->second;
    std::vector<float>& acc = sum.sum[*name];
    if (acc.empty()) {
      acc.resize(values.size());
      tensor::ScaledCopy(acc.data(), tensor::UnalignedFloats::Of(values), weight);
    } else {
      tensor::ScaledAdd(acc.data(),
                        tensor::UnalignedFloats::Of(
                            absl::MakeConstSpan(values).first(std::min(values.size(), acc.size()))),
                        weight);
    }
  }
  if (by_epoch_.size() <= max_sums_) return 0;
  auto oldest = std::min_element(
      by_epoch_.begin(), by_epoch_.end(),
      [](const auto& a, const auto& b) { return a.second.last_sequence < b.second.last_sequence; });
  const int dropped = oldest->second.pushes;
  by_epoch_.erase(oldest);
  return dropped;
}

void UnsavedPushes::Release(uint64_t incarnation, int64_t durable_epoch) {
  by_epoch_.erase(by_epoch_.lower_bound({incarnation, std::numeric_limits<int64_t>::min()}),
                  by_epoch_.lower_bound({incarnation, durable_epoch}));
}

void UnsavedPushes::LoseAll() {
  for (auto& [key, sum] : by_epoch_) resend_.push_back(std::move(sum));
  by_epoch_.clear();
  std::stable_sort(resend_.begin(), resend_.end(), [](const PushSum& a, const PushSum& b) {
    return a.last_sequence < b.last_sequence;
  });
}

}  // namespace syncopate::client
