#include "cli/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace syncopate::cli {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
    const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  if (access(argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("not executable: ", argv[0]));
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (!env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::UnavailableError(absl::StrCat("cannot open ", log_path));
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::UnavailableError(absl::StrCat("fork failed: ", strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, log_path));
}

ChildProcess::~ChildProcess() {
  if (running()) {
    Signal(SIGKILL);
    Wait(absl::Seconds(5));
  }
}

void ChildProcess::Signal(int sig) {
  if (status_) return;
  // The child leads its own process group, so a program it started (a user's trainer command
  // run through /bin/sh) gets the signal too; before the child's setpgid, only the child.
  if (kill(-pid_, sig) != 0) kill(pid_, sig);
}

std::optional<int> ChildProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!status_) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      break;
    }
    if (r < 0 && errno != EINTR) {
      status_ = -1;
      break;
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return status_;
}

bool ChildProcess::running() { return !Wait(absl::ZeroDuration()).has_value(); }

int ChildProcess::Stop(absl::Duration grace) {
  Signal(SIGTERM);
  return WaitOrKill(grace);
}

int ChildProcess::WaitOrKill(absl::Duration grace) {
  if (std::optional<int> s = Wait(grace)) return *s;
  Signal(SIGKILL);
  return Wait(absl::Seconds(5)).value_or(-1);
}

std::string DescribeExit(int status) {
  if (status < 0) return "unknown";
  if (WIFEXITED(status)) return absl::StrCat("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return "stopped";
}

}  // namespace syncopate::cli
