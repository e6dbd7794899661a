// Test helper: a grpc::ByteBuffer's bytes as one string (to compare a hand-encoded message with
// protobuf's serialization, or to parse it).
#ifndef SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_
#define SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_

#include <string>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"

namespace syncopate::rpc::testing {

inline std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

}  // namespace syncopate::rpc::testing

#endif  // SYNCOPATE_RPC_BYTE_BUFFER_TESTING_H_
