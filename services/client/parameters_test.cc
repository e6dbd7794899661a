#include "client/parameters.h"

#include <limits>

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

TEST(BufferParameters, ReadsAndWritesTheCallersOwnMemory) {
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<float> b = {7, 8};
  BufferParameters parameters;
  ASSERT_TRUE(parameters.Add("layer/w", {2, 3}, w.data()).ok());
  ASSERT_TRUE(parameters.Add("layer/b", {2}, b.data()).ok());
  // Specs in name order, whatever the order of registration.
  ASSERT_EQ(parameters.Specs().size(), 2u);
  EXPECT_EQ(parameters.Specs()[0], (tensor::TensorSpec{"layer/b", {2}}));
  EXPECT_EQ(parameters.Specs()[1], (tensor::TensorSpec{"layer/w", {2, 3}}));

  tensor::TensorMap read;
  ASSERT_TRUE(parameters.Read(&read).ok());
  EXPECT_EQ(read, (tensor::TensorMap{{"layer/b", {7, 8}}, {"layer/w", {1, 2, 3, 4, 5, 6}}}));

  // A write lands in the buffer itself: the same memory, new values.
  const float* before = w.data();
  ASSERT_TRUE(parameters.Write({{"layer/w", {6, 5, 4, 3, 2, 1}}}).ok());
  EXPECT_EQ(w.data(), before);
  EXPECT_EQ(w, (std::vector<float>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(b, (std::vector<float>{7, 8})) << "a parameter not named stays as it was";
}

TEST(BufferParameters, CallbacksReachMemoryTheLibraryCannotAddress) {
  std::vector<float> device = {1, 2};  // stands in for a GPU tensor
  int reads = 0;
  int writes = 0;
  BufferParameters parameters;
  ASSERT_TRUE(parameters
                  .Add(
                      "w", {2},
                      [&](absl::Span<float> out) {
                        ++reads;
                        std::copy(device.begin(), device.end(), out.begin());
                        return absl::OkStatus();
                      },
                      [&](absl::Span<const float> in) {
                        ++writes;
                        device.assign(in.begin(), in.end());
                        return absl::OkStatus();
                      })
                  .ok());
  tensor::TensorMap read;
  ASSERT_TRUE(parameters.Read(&read).ok());
  EXPECT_EQ(read["w"], (std::vector<float>{1, 2}));
  ASSERT_TRUE(parameters.Write({{"w", {3, 4}}}).ok());
  EXPECT_EQ(device, (std::vector<float>{3, 4}));
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(writes, 1);
}

// A callback that fails (a device out of memory, say) is an error of Read and Write.
TEST(BufferParameters, ACallbacksErrorIsTheCallsError) {
  BufferParameters parameters;
  ASSERT_TRUE(parameters
                  .Add(
                      "w", {2},
                      [](absl::Span<float>) { return absl::ResourceExhaustedError("no memory"); },
                      [](absl::Span<const float>) { return absl::InternalError("lost"); })
                  .ok());
  tensor::TensorMap read;
  EXPECT_TRUE(absl::IsResourceExhausted(parameters.Read(&read)));
  EXPECT_TRUE(absl::IsInternal(parameters.Write({{"w", {3, 4}}})));
}

TEST(BufferParameters, BadRegistrationsAreRefusedAndRegisterNothing) {
  float data[4] = {};
  BufferParameters parameters;
  ASSERT_TRUE(parameters.Add("w", {4}, data).ok());
  const int64_t big = int64_t{1} << 32;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"", {4}}, {"w", {4}}, {"v", {}}, {"v", {2, 0}}, {"v", {-1}}, {"v", {big, big}}}) {
    absl::Status added = parameters.Add(name, shape, data);
    EXPECT_TRUE(absl::IsInvalidArgument(added)) << "'" << name << "': " << added;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(parameters.Add("v", {4}, nullptr)));
  EXPECT_TRUE(absl::IsInvalidArgument(parameters.Add("v", {4}, nullptr, nullptr)));
  EXPECT_NE(parameters.Add("w", {4}, data).message().find("'w' is registered twice"),
            std::string::npos);
  ASSERT_EQ(parameters.Specs().size(), 1u);
}

TEST(BufferParameters, ABadWriteChangesNothing) {
  std::vector<float> w = {1, 2};
  std::vector<float> v = {3};
  BufferParameters parameters;
  ASSERT_TRUE(parameters.Add("w", {2}, w.data()).ok());
  ASSERT_TRUE(parameters.Add("v", {1}, v.data()).ok());
  // "v" is written only after every entry was checked: the bad "w" stops the whole write.
  EXPECT_TRUE(absl::IsInvalidArgument(parameters.Write({{"v", {9}}, {"w", {9}}})));
  EXPECT_TRUE(absl::IsInvalidArgument(parameters.Write({{"v", {9}}, {"x", {9}}})));
  EXPECT_EQ(w, (std::vector<float>{1, 2}));
  EXPECT_EQ(v, (std::vector<float>{3}));
}

}  // namespace
}  // namespace syncopate::client
