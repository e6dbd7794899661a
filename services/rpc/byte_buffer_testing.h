// Test helpers: a grpc::ByteBuffer's bytes as one string (to compare a hand-encoded message with
// protobuf's serialization, or to parse it), and bytes cut into slices where a receiver's buffers
// might cut them. No test framework: the fuzz targets use them too.
#ifndef SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_
#define SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "grpcpp/support/byte_buffer.h"

namespace syncopate::rpc::testing {

inline std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return "(unreadable buffer)";
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` as a buffer of slices cut every `every` bytes, the first cut after `first` bytes, each
// slice its own allocation (a value straddling a cut is split in memory too).
inline grpc::ByteBuffer Cut(const std::string& bytes, size_t first, size_t every) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  size_t size = std::max<size_t>(first, 1);
  while (at < bytes.size()) {
    // Refcounted, as a receive buffer is: gRPC would merge small inlined slices into one.
    const size_t n = std::min(size, bytes.size() - at);
    char* piece = new char[n];
    std::memcpy(piece, bytes.data() + at, n);
    slices.emplace_back(piece, n, [](void* p) { delete[] static_cast<char*>(p); });
    at += n;
    size = std::max<size_t>(every, 1);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace syncopate::rpc::testing

#endif  // SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_
