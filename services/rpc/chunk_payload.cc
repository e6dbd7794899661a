#include "rpc/chunk_payload.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace syncopate::rpc {
namespace {

void DeleteString(void* held) { delete static_cast<std::string*>(held); }

}  // namespace

ChunkPayload::ChunkPayload(std::string bytes) : size_(bytes.size()) {
  if (bytes.empty()) return;
  auto* held = new std::string(std::move(bytes));
  slices_.emplace_back(held->data(), held->size(), &DeleteString, held);
}

ChunkPayload::ChunkPayload(std::vector<grpc::Slice> slices, size_t offset, size_t size)
    : slices_(std::move(slices)), offset_(offset), size_(size) {}

void ChunkPayload::ForEachRun(
    const std::function<void(size_t first, tensor::UnalignedFloats values)>& run) const {
  size_t left = size() * sizeof(float);  // bytes of whole values not yet handed out
  size_t element = 0;
  char split[sizeof(float)];  // a value split between slices, as far as it has come
  size_t have = 0;
  size_t skip = offset_;
  for (const grpc::Slice& slice : slices_) {
    if (left == 0) break;
    const size_t from = std::min(skip, slice.size());
    skip -= from;
    const char* at = reinterpret_cast<const char*>(slice.begin()) + from;
    size_t n = std::min(slice.size() - from, left);
    if (n == 0) continue;
    if (have > 0) {
      const size_t take = std::min(sizeof(float) - have, n);
      std::memcpy(split + have, at, take);
      have += take;
      at += take;
      n -= take;
      left -= take;
      if (have < sizeof(float)) continue;
      run(element++, {split, 1});
      have = 0;
    }
    const size_t whole = n / sizeof(float);
    if (whole > 0) {
      run(element, {at, whole});
      element += whole;
      at += whole * sizeof(float);
      n -= whole * sizeof(float);
      left -= whole * sizeof(float);
    }
    std::memcpy(split, at, n);
    have = n;
    left -= n;
  }
}

void ChunkPayload::CopyTo(char* out) const {
  size_t left = size_;
  size_t skip = offset_;
  for (const grpc::Slice& slice : slices_) {
    if (left == 0) break;
    const size_t from = std::min(skip, slice.size());
    skip -= from;
    const size_t take = std::min(slice.size() - from, left);
    if (take == 0) continue;
    std::memcpy(out, slice.begin() + from, take);
    out += take;
    left -= take;
  }
}

void ChunkPayload::AppendTo(std::string* out) const {
  const size_t old = out->size();
  out->resize(old + size_);
  CopyTo(out->data() + old);
}

}  // namespace syncopate::rpc
