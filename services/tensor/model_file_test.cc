#include "tensor/model_file.h"

#include <stdlib.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace syncopate::tensor {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string TempDir() {
  char pattern[] = "/tmp/model-file-test-XXXXXX";
  EXPECT_NE(mkdtemp(pattern), nullptr);
  return pattern;
}

TEST(ModelFileTest, NpyHeaderIsPaddedToSixtyFourBytes) {
  const std::string npy = NpyBytes({{"w", {2, 3}}, {1, 2, 3, 4, 5, 6}});
  EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header = static_cast<unsigned char>(npy[8]) | (npy[9] << 8);
  EXPECT_EQ((10 + header) % 64, 0u);
  EXPECT_EQ(npy[10 + header - 1], '\n');
  EXPECT_NE(npy.find("'shape': (2, 3,)"), std::string::npos) << npy.substr(10, header);
  EXPECT_EQ(npy.size(), 10 + header + 6 * sizeof(float));
  EXPECT_NE(NpyBytes({{"b", {3}}, {1, 2, 3}}).find("'shape': (3, )"), std::string::npos);
}

TEST(ModelFileTest, WritesOnlyNpzOrPt) {
  const std::string dir = TempDir();
  Model model;
  model.tensors.push_back({{"w", {2}}, {1, 2}});
  EXPECT_TRUE(absl::IsInvalidArgument(WriteModel(model, dir + "/model.bin")));
  EXPECT_FALSE(Exists(dir + "/model.bin"));
  ASSERT_TRUE(WriteModel(model, dir + "/model.npz").ok());
  ASSERT_TRUE(WriteModel(model, dir + "/model.pt").ok());
  EXPECT_TRUE(Exists(dir + "/model.pt"));
  EXPECT_FALSE(Exists(dir + "/model.pt.partial"));
}

// A folder the path names that does not exist yet is made (a trainer on another host writes the
// job's model into its copy of the run directory).
TEST(ModelFileTest, MakesTheFoldersThePathNames) {
  const std::string dir = TempDir();
  Model model;
  model.tensors.push_back({{"w", {2}}, {1, 2}});
  ASSERT_TRUE(WriteModel(model, dir + "/srv/job-1/model.npz").ok());
  EXPECT_TRUE(Exists(dir + "/srv/job-1/model.npz"));
}

TEST(ModelFileTest, ModelOfTakesEverySpecInNameOrder) {
  const std::vector<TensorSpec> specs = {{"w", {2, 2}}, {"b", {2}}};
  absl::StatusOr<Model> model = ModelOf(specs, {{"b", {5, 6}}, {"w", {1, 2, 3, 4}}, {"x", {0}}});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->tensors.size(), 2u);
  EXPECT_EQ(model->tensors[0].spec.name, "b");
  EXPECT_EQ(model->tensors[1].values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(absl::IsInvalidArgument(ModelOf(specs, {{"w", {1, 2, 3, 4}}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ModelOf(specs, {{"b", {5}}, {"w", {1, 2, 3, 4}}}).status()));
}

}  // namespace
}  // namespace syncopate::tensor
