// A child process started by the CLI: its own process group (so a terminal's Ctrl-C reaches only
// the CLI, which then stops children in order), stdout/stderr to a log file, and SIGTERM if the CLI
// dies.
#ifndef SYNCOPATE_CLI_CHILD_PROCESS_H_
#define SYNCOPATE_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace syncopate::cli {

// Not thread-safe. The destructor kills a child still running.
class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv, the current environment plus `env`, output to `log_path`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
      const std::string& log_path);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // Signals the child's process group: the child and whatever it started.
  void Signal(int sig);
  // Waits up to `timeout`; the exit status (as from waitpid) once it exited, nullopt if still
  // running.
  std::optional<int> Wait(absl::Duration timeout);
  bool running();
  // SIGTERM, then WaitOrKill(grace). Returns the exit status.
  int Stop(absl::Duration grace);
  // Waits up to `grace` for the child to exit, then SIGKILLs it. Returns the exit status.
  int WaitOrKill(absl::Duration grace);

 private:
  ChildProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  pid_t pid_;
  std::string log_path_;
  std::optional<int> status_;
};

// A readable account of a waitpid status ("exit 0", "killed by signal 9").
std::string DescribeExit(int status);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_CHILD_PROCESS_H_
