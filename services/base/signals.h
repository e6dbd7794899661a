// Orderly shutdown on SIGTERM/SIGINT: block them in every thread, then wait for one in main.
#ifndef SYNCOPATE_BASE_SIGNALS_H_
#define SYNCOPATE_BASE_SIGNALS_H_

#include "absl/time/time.h"

namespace syncopate::base {

// Blocks SIGTERM and SIGINT for the calling thread and every thread it creates afterwards. Call
// first thing in main.
void BlockTerminationSignals();

// Waits up to `timeout` for SIGTERM or SIGINT; returns the signal number, or 0 on timeout.
int WaitForTerminationSignal(absl::Duration timeout);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_SIGNALS_H_
