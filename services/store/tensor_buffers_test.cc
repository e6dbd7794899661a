#include "store/tensor_buffers.h"

#include <thread>

#include "gtest/gtest.h"

namespace syncopate::store {
namespace {

TEST(TensorBuffersTest, ABufferLetGoIsTheNextOfItsSize) {
  TensorBuffers buffers(/*max_kept_bytes=*/1 << 20);
  TensorBuffers::Buffer a = buffers.Take(1000);
  EXPECT_EQ(*a, std::vector<float>(1000, 0.0f)) << "a new buffer is zeros";
  (*a)[0] = 7;
  const float* memory = a->data();
  TensorBuffers::Buffer shared = a;  // a snapshot's reference
  a.reset();
  EXPECT_EQ(buffers.kept_bytes(), 0u) << "still held";
  shared.reset();
  EXPECT_EQ(buffers.kept_bytes(), 4000u);
  TensorBuffers::Buffer other = buffers.Take(999);
  EXPECT_NE(other->data(), memory) << "another size is another buffer";
  TensorBuffers::Buffer again = buffers.Take(1000);
  EXPECT_EQ(again->data(), memory);
  EXPECT_EQ((*again)[0], 7) << "a kept buffer's values are what they were";
  EXPECT_EQ(buffers.kept_bytes(), 0u);
  again.reset();
  const std::vector<float> from(1000, 2.5f);
  TensorBuffers::Buffer copy = buffers.Copy(from);
  EXPECT_EQ(copy->data(), memory);
  EXPECT_EQ(*copy, from);
}

TEST(TensorBuffersTest, KeepsNoMoreThanItsLimit) {
  TensorBuffers buffers(/*max_kept_bytes=*/10 * sizeof(float));
  TensorBuffers::Buffer a = buffers.Take(6), b = buffers.Take(6);
  a.reset();
  b.reset();  // 12 floats would pass the limit: freed
  EXPECT_EQ(buffers.kept_bytes(), 6 * sizeof(float));
  buffers.SetMaxKeptBytes(0);
  EXPECT_EQ(buffers.kept_bytes(), 0u);
  buffers.Take(6).reset();
  EXPECT_EQ(buffers.kept_bytes(), 0u);
}

TEST(TensorBuffersTest, BuffersOutliveThePoolAndComeBackFromAnyThread) {
  TensorBuffers::Buffer survivor;
  {
    TensorBuffers buffers(1 << 20);
    survivor = buffers.Take(10);
    TensorBuffers::Buffer elsewhere = buffers.Take(10);
    std::thread([held = std::move(elsewhere)]() mutable { held.reset(); }).join();
    EXPECT_EQ(buffers.kept_bytes(), 40u);
  }
  (*survivor)[9] = 1;  // still the holder's, and freed when it lets go
  survivor.reset();
}

}  // namespace
}  // namespace syncopate::store
