#include "rpc/chunk_payload.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

std::string BytesOf(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// `bytes` after `lead` bytes of padding, cut into slices of `every` bytes.
ChunkPayload Sliced(const std::string& bytes, size_t lead, size_t every) {
  const std::string all = std::string(lead, 'x') + bytes;
  std::vector<grpc::Slice> slices;
  for (size_t at = lead / every * every; at < all.size(); at += every) {
    slices.emplace_back(all.substr(at, every));
  }
  return ChunkPayload(std::move(slices), lead % every, bytes.size());
}

// The values ForEachRun hands out, checking that runs are consecutive.
std::vector<float> Runs(const ChunkPayload& payload, size_t* runs_of_one = nullptr) {
  std::vector<float> out;
  payload.ForEachRun([&](size_t first, tensor::UnalignedFloats values) {
    EXPECT_EQ(first, out.size());
    EXPECT_GT(values.size, 0u);
    for (size_t i = 0; i < values.size; ++i) out.push_back(values[i]);
    if (runs_of_one != nullptr && values.size == 1) ++*runs_of_one;
  });
  return out;
}

TEST(ChunkPayloadTest, HandsOutEveryValueInOrderWhereverTheSlicesCutThem) {
  std::vector<float> values(257);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const std::string bytes = BytesOf(values);
  for (size_t every : {1, 2, 3, 4, 5, 7, 64, 1000, 2000}) {
    for (size_t lead : {0, 1, 3, 6}) {
      const ChunkPayload payload = Sliced(bytes, lead, every);
      ASSERT_EQ(payload.size(), values.size());
      EXPECT_EQ(Runs(payload), values) << every << " " << lead;
      std::string copied(bytes.size(), '\0');
      payload.CopyTo(copied.data());
      EXPECT_EQ(copied, bytes) << every << " " << lead;
    }
  }
}

TEST(ChunkPayloadTest, AValueSplitBetweenSlicesComesAsARunOfOne) {
  const std::vector<float> values{1, 2, 3, 4};
  size_t ones = 0;
  // Slices of 6 bytes: the value at bytes 4-7 straddles the cut at 6.
  EXPECT_EQ(Runs(Sliced(BytesOf(values), 0, 6), &ones), values);
  EXPECT_GE(ones, 1u);
  ones = 0;
  EXPECT_EQ(Runs(Sliced(BytesOf(values), 0, 8), &ones), values);  // aligned cuts: whole runs
  EXPECT_EQ(ones, 0u);
}

TEST(ChunkPayloadTest, OwnsAStringAndLeavesOutTrailingBytesShortOfAValue) {
  std::string bytes = BytesOf({1.5f, -2.5f}) + "ab";
  const ChunkPayload payload(bytes);
  EXPECT_EQ(payload.bytes(), 10u);
  EXPECT_EQ(payload.size(), 2u);
  EXPECT_EQ(Runs(payload), (std::vector<float>{1.5f, -2.5f}));
  std::string appended = "head";
  payload.AppendTo(&appended);
  EXPECT_EQ(appended, "head" + bytes);
  EXPECT_EQ(Runs(Sliced(bytes, 1, 3)), (std::vector<float>{1.5f, -2.5f}));
}

TEST(ChunkPayloadTest, AnEmptyPayloadHasNoRuns) {
  EXPECT_TRUE(Runs(ChunkPayload()).empty());
  EXPECT_TRUE(Runs(ChunkPayload(std::string())).empty());
  std::string appended = "x";
  ChunkPayload().AppendTo(&appended);
  EXPECT_EQ(appended, "x");
}

}  // namespace
}  // namespace syncopate::rpc
