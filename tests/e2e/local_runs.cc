#include "local_runs.h"

#include <sys/wait.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace syncopate::e2e {

std::string BinDir() {
  const char* dir = std::getenv("SYNCOPATE_BIN_DIR");
  return dir != nullptr && *dir != '\0' ? dir : SYNCOPATE_BIN_DIR;
}

std::unique_ptr<cli::ChildProcess> StartBinary(const std::string& binary,
                                               std::vector<std::string> args,
                                               const std::string& log) {
  args.insert(args.begin(), BinDir() + "/" + binary);
  auto p = cli::ChildProcess::Spawn(args, {{"OPENBLAS_NUM_THREADS", "1"}}, log);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

std::unique_ptr<cli::ChildProcess> StartSyncopate(const std::string& command,
                                                  const std::string& dir,
                                                  std::vector<std::string> args) {
  args.insert(args.begin(), {command, "--report-dir=" + dir});
  return StartBinary("syncopate", std::move(args), dir + ".out");
}

int RunBinary(const std::string& binary, std::vector<std::string> args, const std::string& log,
              absl::Duration limit) {
  auto p = StartBinary(binary, std::move(args), log);
  if (!p) return -1;
  std::optional<int> status = p->Wait(limit);
  EXPECT_TRUE(status.has_value()) << binary << " did not finish in time; see " << log;
  return status.value_or(-1);
}

int RunSyncopate(const std::string& command, const std::string& dir, std::vector<std::string> args,
                 absl::Duration limit) {
  args.insert(args.begin(), {command, "--report-dir=" + dir});
  return RunBinary("syncopate", std::move(args), dir + ".out", limit);
}

int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

}  // namespace syncopate::e2e
