#include "base/files.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
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

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
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

TEST(AtomicFileWriter, PublishesThePiecesWholeAtCommit) {
  // Pieces smaller and larger than the direct writes' buffer, and a length that is no whole
  // number of blocks; on the test's disk (direct writes), and on tmpfs where the machine has one
  // (it refuses O_DIRECT: written through the page cache).
  const std::string big(AtomicFileWriter::kDirectBufferBytes + 4097, 'x');
  const std::string expected = "new " + big + big.substr(0, 10) + "end";
  std::vector<std::string> folders = {TempDir()};
  if (IsDirectory("/dev/shm")) {
    std::string shm = "/dev/shm/files_test-XXXXXX";
    if (mkdtemp(shm.data()) != nullptr) folders.push_back(shm);
  }
  for (const std::string& folder : folders) {
    const std::string path = folder + "/model.ckpt";
    for (AtomicFileWriter::Mode mode :
         {AtomicFileWriter::Mode::kCached, AtomicFileWriter::Mode::kDirectDurable}) {
      ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
      absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file = AtomicFileWriter::Open(path, mode);
      ASSERT_TRUE(file.ok()) << file.status();
      for (absl::string_view piece :
           {absl::string_view("new "), absl::string_view(big), absl::string_view(""),
            absl::string_view(big).substr(0, 10), absl::string_view("end")}) {
        ASSERT_TRUE((*file)->Append(piece).ok());
      }
      EXPECT_EQ(*ReadFile(path), "old") << "a reader sees the old file until the commit";
      ASSERT_TRUE((*file)->Commit().ok());
      EXPECT_EQ(ReadFile(path)->size(), expected.size()) << path;
      EXPECT_TRUE(*ReadFile(path) == expected) << path;
      EXPECT_FALSE(Exists(path + ".tmp"));
      EXPECT_EQ((*file)->Commit().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ((*file)->Append("more").code(), absl::StatusCode::kFailedPrecondition);
    }
    unlink(path.c_str());
  }
  if (folders.size() > 1) rmdir(folders[1].c_str());
}

// A write that fails (here the process's file-size limit: EFBIG) abandons the file, in either mode,
// naming the reason; the path keeps what it held.
TEST(AtomicFileWriter, AFailedWriteAbandonsTheFile) {
  const std::string path = TempDir() + "/model.ckpt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  rlimit before;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  for (AtomicFileWriter::Mode mode :
       {AtomicFileWriter::Mode::kCached, AtomicFileWriter::Mode::kDirectDurable}) {
    absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file = AtomicFileWriter::Open(path, mode);
    ASSERT_TRUE(file.ok()) << file.status();
    std::fprintf(stderr, "direct writes: %s\n", (*file)->direct() ? "yes" : "no");
    absl::Status status = (*file)->Append(std::string((2 << 20) + 1, 'x'));
    if (status.ok()) status = (*file)->Commit();  // the direct writer's buffer goes out here
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(absl::StrContains(status.message(), strerror(EFBIG))) << status;
    EXPECT_EQ(*ReadFile(path), "old");
    EXPECT_FALSE(Exists(path + ".tmp"));
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &before), 0);
  signal(SIGXFSZ, handler);
}

TEST(AtomicFileWriter, DroppedWithoutCommitLeavesThePathAsItWas) {
  const std::string path = TempDir() + "/model.ckpt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file = AtomicFileWriter::Open(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("half of it").ok());
  }
  EXPECT_EQ(*ReadFile(path), "old");
  EXPECT_FALSE(Exists(path + ".tmp"));
}

TEST(AtomicFileWriter, NamesTheFileItCannotWrite) {
  const std::string path = TempDir() + "/no/such/folder/model.ckpt";
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> file = AtomicFileWriter::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(file.status().message(), path + ".tmp")) << file.status();
  EXPECT_FALSE(WriteFileAtomically(path, "x").ok());
}

}  // namespace
}  // namespace syncopate::base
