// How a process announces that it is serving, and on which ports. Processes bind port 0 and write
// this file once their servers run; `syncopate local` waits for it instead of guessing free ports.
#ifndef SYNCOPATE_BASE_READY_FILE_H_
#define SYNCOPATE_BASE_READY_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace syncopate::base {

struct ReadyInfo {
  int grpc_port = 0;
  int metrics_port = 0;
  int pid = 0;
};

// Writes {"grpc_port":..,"metrics_port":..,"pid":..} atomically. No-op when `path` is empty.
absl::Status WriteReadyFile(const std::string& path, const ReadyInfo& info);

// Polls for the file until `deadline`; DEADLINE_EXCEEDED if it never appears, INVALID_ARGUMENT if
// it is not a ready file.
absl::StatusOr<ReadyInfo> WaitForReadyFile(const std::string& path, absl::Time deadline);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_READY_FILE_H_
