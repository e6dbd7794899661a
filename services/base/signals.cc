#include "base/signals.h"

#include <signal.h>

#include <ctime>

namespace syncopate::base {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal(absl::Duration timeout) {
  sigset_t set = TerminationSignals();
  timespec ts = absl::ToTimespec(timeout);
  int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace syncopate::base
