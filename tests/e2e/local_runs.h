// Running the `syncopate` CLI as a user would, from end-to-end tests.
#ifndef SYNCOPATE_TESTS_E2E_LOCAL_RUNS_H_
#define SYNCOPATE_TESTS_E2E_LOCAL_RUNS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/child_process.h"

namespace syncopate::e2e {

// The binaries under test: those of this build, or of a relocated one ($SYNCOPATE_BIN_DIR, as
// scripts/gpu-bundle.sh sets it on a GPU machine).
std::string BinDir();

// Starts build/bin/<binary> ARGS... with one BLAS thread, output to `log`.
std::unique_ptr<cli::ChildProcess> StartBinary(const std::string& binary,
                                               std::vector<std::string> args,
                                               const std::string& log);

// Runs build/bin/<binary> ARGS... to completion, output to `log` (deadline: `limit`, a failure
// when passed), returning the wait status.
int RunBinary(const std::string& binary, std::vector<std::string> args, const std::string& log,
              absl::Duration limit = absl::Minutes(1));

// Starts `syncopate <command> --report-dir=DIR ARGS...`, output to DIR.out.
std::unique_ptr<cli::ChildProcess> StartSyncopate(const std::string& command,
                                                  const std::string& dir,
                                                  std::vector<std::string> args);
inline std::unique_ptr<cli::ChildProcess> StartLocal(const std::string& dir,
                                                     std::vector<std::string> args) {
  return StartSyncopate("local", dir, std::move(args));
}

// Runs to completion (deadline: `limit`, a failure when passed), returning the wait status.
int RunSyncopate(const std::string& command, const std::string& dir, std::vector<std::string> args,
                 absl::Duration limit = absl::Minutes(3));
inline int RunLocal(const std::string& dir, std::vector<std::string> args,
                    absl::Duration limit = absl::Minutes(3)) {
  return RunSyncopate("local", dir, std::move(args), limit);
}

// The exit code of a wait status; -1 when the process did not exit normally.
int ExitCode(int status);

}  // namespace syncopate::e2e

#endif  // SYNCOPATE_TESTS_E2E_LOCAL_RUNS_H_
