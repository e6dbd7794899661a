#include "client/local_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace syncopate::client {

absl::Status LocalModel::Begin() {
  RETURN_IF_ERROR(parameters_.Read(&base_));
  base_is_current_ = true;
  return absl::OkStatus();
}

absl::StatusOr<tensor::SharedTensorMap> LocalModel::TakeDelta(
    std::optional<int64_t> pending_clock) {
  tensor::TensorMap current;
  if (absl::Status read = parameters_.Read(&current); !read.ok()) return read;
  if (current.size() != base_.size() || !CheckShapes(current).ok()) {
    return absl::InternalError("the parameters' tensors or sizes changed since the base was taken");
  }
  // The delta is written over the old base's buffers (one pass, no copy), then shared with the
  // pending list instead of copied into it.
  tensor::TensorMap delta = std::exchange(base_, std::move(current));
  for (auto& [name, values] : delta) {
    const std::vector<float>& now = base_.at(name);
    for (size_t i = 0; i < values.size(); ++i) values[i] = now[i] - values[i];
  }
  base_is_current_ = true;
  unpushed_steps_ = 0;
  if (feedback_) feedback_->Compress(delta);
  tensor::SharedTensorMap shared = tensor::Share(std::move(delta));
  if (pending_clock) pending_.push_back({*pending_clock, shared});
  return shared;
}

absl::Status LocalModel::CheckShapes(const tensor::TensorMap& pulled) const {
  for (const auto& [name, b] : base_) {
    auto it = pulled.find(name);
    if (it == pulled.end() || it->second.size() != b.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pulled model lacks parameter '", name, "' or has a wrong size"));
    }
  }
  return absl::OkStatus();
}

absl::Status LocalModel::Replace(const tensor::TensorMap& model) {
  RETURN_IF_ERROR(CheckShapes(model));
  RETURN_IF_ERROR(WriteAndRebase(nullptr, model));
  unpushed_steps_ = 0;
  base_is_current_ = true;
  return absl::OkStatus();
}

absl::Status LocalModel::Rebase(tensor::TensorMap pulled, int64_t includes_clock) {
  RETURN_IF_ERROR(CheckShapes(pulled));
  while (!pending_.empty() && pending_.front().clock <= includes_clock) pending_.pop_front();
  tensor::TensorMap new_base;
  for (const auto& [name, b] : base_) {
    std::vector<float> base = std::move(pulled.at(name));
    for (const Pending& p : pending_) {
      const std::vector<float>& d = p.delta->at(name);
      for (size_t i = 0; i < base.size(); ++i) base[i] += d[i];
    }
    new_base.emplace(name, std::move(base));
  }
  if (base_is_current_) {
    // No step since the base was read: local - base is zero, and the new local model is the new
    // base. One read of the parameters (a device-to-host copy on a GPU) fewer per round. The
    // result is the full path's for finite values, except that a -0.0 base stays -0.0 (the full
    // path adds +0.0) and an Inf or NaN local value gives the pulled value (the full path, NaN).
    return WriteAndRebase(nullptr, std::move(new_base));
  }
  tensor::TensorMap current;
  if (absl::Status read = parameters_.Read(&current); !read.ok()) return read;
  for (auto& [name, local] : current) {
    // local = base + (local - old base): the steps since the last push.
    const std::vector<float>& base = new_base.at(name);
    const std::vector<float>& old_base = base_.at(name);
    for (size_t i = 0; i < local.size(); ++i) local[i] = base[i] + (local[i] - old_base[i]);
  }
  return WriteAndRebase(&current, std::move(new_base));
}

absl::Status LocalModel::WriteAndRebase(const tensor::TensorMap* local,
                                        tensor::TensorMap new_base) {
  if (absl::Status written = parameters_.Write(local != nullptr ? *local : new_base);
      !written.ok()) {
    base_is_current_ = false;  // a failed write may have changed some of them
    return written;
  }
  base_ = std::move(new_base);
  return absl::OkStatus();
}

std::optional<tensor::SharedTensorMap> LocalModel::TakeResidual() {
  if (!feedback_) return std::nullopt;
  tensor::TensorMap residual = feedback_->TakeResidual();
  const bool empty = std::all_of(residual.begin(), residual.end(), [](const auto& entry) {
    return std::all_of(entry.second.begin(), entry.second.end(), [](float v) { return v == 0; });
  });
  if (empty) return std::nullopt;
  return tensor::Share(std::move(residual));
}

}  // namespace syncopate::client
