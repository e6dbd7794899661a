#include "data/dataset.h"

#include <set>

#include "gtest/gtest.h"

namespace syncopate::data {
namespace {

TEST(FashionMnist, LoadsBothSplitsFromTheDebianPackage) {
  absl::StatusOr<Dataset> test = LoadFashionMnist(kDefaultFashionMnistDir, "test");
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->size(), 10000u);
  EXPECT_EQ(test->features, 784);
  std::set<int> classes(test->labels.begin(), test->labels.end());
  EXPECT_EQ(classes.size(), 10u);
  for (float v : test->images) ASSERT_TRUE(v >= 0 && v <= 1);
}

TEST(FashionMnist, BadInputsAreClearErrors) {
  EXPECT_EQ(LoadFashionMnist("/nonexistent", "test").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadFashionMnist(kDefaultFashionMnistDir, "dev").status().code(),
            absl::StatusCode::kInvalidArgument);
  // Labels passed as images: wrong magic number.
  EXPECT_EQ(LoadIdx(std::string(kDefaultFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz",
                    std::string(kDefaultFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Shard, DisjointAndComplete) {
  Dataset full;
  full.features = 1;
  for (int i = 0; i < 10; ++i) {
    full.images.push_back(static_cast<float>(i));
    full.labels.push_back(i);
  }
  std::multiset<int> seen;
  for (int r = 0; r < 3; ++r) {
    Dataset s = *Shard(full, r, 3);
    seen.insert(s.labels.begin(), s.labels.end());
  }
  EXPECT_EQ(seen, std::multiset<int>(full.labels.begin(), full.labels.end()));
  EXPECT_FALSE(Shard(full, 3, 3).ok());
}

TEST(BatchSampler, DeterministicAndCoversAnEpoch) {
  Dataset full;
  full.features = 1;
  for (int i = 0; i < 8; ++i) {
    full.images.push_back(static_cast<float>(i));
    full.labels.push_back(i);
  }
  BatchSampler a(8, 4, 7), b(8, 4, 7);
  std::vector<float> xa, xb;
  std::vector<int32_t> ya, yb;
  std::multiset<int> epoch;
  for (int i = 0; i < 2; ++i) {
    a.Next(full, &xa, &ya);
    b.Next(full, &xb, &yb);
    EXPECT_EQ(ya, yb);
    epoch.insert(ya.begin(), ya.end());
  }
  EXPECT_EQ(epoch.size(), 8u);
  EXPECT_EQ(std::set<int>(epoch.begin(), epoch.end()).size(), 8u);
}

}  // namespace
}  // namespace syncopate::data
