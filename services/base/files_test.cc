#include "base/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace syncopate::base {
namespace {

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "/files_test-XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

TEST(MakeDirectories, CreatesEveryMissingParent) {
  const std::string root = TempDir();
  ASSERT_TRUE(MakeDirectories(root + "/runs/demo/bsp").ok());
  EXPECT_TRUE(IsDirectory(root + "/runs/demo/bsp"));
  // Again, and with a trailing slash: it exists, which is what was asked.
  EXPECT_TRUE(MakeDirectories(root + "/runs/demo/bsp").ok());
  EXPECT_TRUE(MakeDirectories(root + "/runs/demo/").ok());
  // Doubled slashes, and "." and ".." along the way.
  ASSERT_TRUE(MakeDirectories(root + "//a//b/./c/../d").ok());
  EXPECT_TRUE(IsDirectory(root + "/a/b/c"));
  EXPECT_TRUE(IsDirectory(root + "/a/b/d"));
  EXPECT_TRUE(MakeDirectories("/").ok());
}

TEST(MakeDirectories, RelativePathsStartAtTheWorkingDirectory) {
  const std::string root = TempDir();
  char previous[4096];
  ASSERT_NE(getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(chdir(root.c_str()), 0);
  const absl::Status made = MakeDirectories("runs/demo");
  ASSERT_EQ(chdir(previous), 0);
  ASSERT_TRUE(made.ok()) << made;
  EXPECT_TRUE(IsDirectory(root + "/runs/demo"));
}

TEST(MakeDirectories, NamesThePathAndTheReason) {
  const std::string root = TempDir();
  ASSERT_TRUE(WriteFileAtomically(root + "/file", "x").ok());
  absl::Status under_file = MakeDirectories(root + "/file/runs/demo");
  EXPECT_FALSE(under_file.ok());
  EXPECT_EQ(under_file.message(), "cannot create " + root + "/file/runs: Not a directory");
  absl::Status is_file = MakeDirectories(root + "/file");
  EXPECT_EQ(is_file.message(), "cannot create " + root + "/file: Not a directory");
  EXPECT_FALSE(IsDirectory(root + "/file/runs"));
  EXPECT_FALSE(MakeDirectories("").ok());
}

}  // namespace
}  // namespace syncopate::base
