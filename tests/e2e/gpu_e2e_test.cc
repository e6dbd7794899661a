// End-to-end on a GPU (label `gpu`; skipped where no GPU is present, a failure where one is but
// cannot be used): a CUDA trainer and a CPU trainer train one CNN together in `syncopate local`.
#include "absl/strings/match.h"
#include "base/files.h"
#include "compute/cuda_backend.h"
#include "compute/device.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

TEST(GpuE2E, AGpuTrainerAndACpuTrainerTrainOneCnn) {
  const absl::Status usable = compute::CudaDeviceStatus();
  if (!usable.ok()) {
    std::optional<std::string> expected = compute::GpuExpectedBecause();
#ifndef SYNCOPATE_EXPECT_CUDA_PLUGIN
    // A build without the CUDA backend (SYNCOPATE_CUDA=OFF, or no toolkit found) has nothing to
    // run on a GPU host, unless a GPU is demanded outright.
    if (expected && !absl::StartsWith(*expected, "SYNCOPATE_REQUIRE_GPU")) expected.reset();
#endif
    ASSERT_FALSE(expected) << *expected << ", but no GPU can be used: " << usable;
    GTEST_SKIP() << "no GPU: " << usable.message();
  }
  const std::string dir = MakeTempDir("gpu");
  const int status = RunLocal(dir,
                              {"--mode=bsp", "--trainers=2", "--device=cuda,cpu", "--model=cnn",
                               "--eval-interval=5s", "--target-accuracy=0.70", "--time-limit=300s"},
                              absl::Minutes(6));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>());
  EXPECT_NE(base::ReadFile(dir + "/trainer-0.log").value_or("").find("compute backend: cuda"),
            std::string::npos);
  EXPECT_NE(base::ReadFile(dir + "/trainer-1.log").value_or("").find("compute backend: cpu"),
            std::string::npos);
  int pushes = 0;
  for (const nlohmann::json& event : ReadTrace(dir, 0)) pushes += event["event"] == "pushed";
  EXPECT_GT(pushes, 10) << "the GPU trainer hardly trained";
}

}  // namespace
}  // namespace syncopate::e2e
