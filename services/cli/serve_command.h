// `syncopate serve`: a job's store shards and coordinator on this host, for trainers started by
// hand here or on other hosts (no Kubernetes): the certificates they need, their SYNCOPATE_*
// settings, the live progress line and the same summary as `syncopate local`.
#ifndef SYNCOPATE_CLI_SERVE_COMMAND_H_
#define SYNCOPATE_CLI_SERVE_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "cli/local_command.h"

namespace syncopate::cli {

struct ServeOptions {
  // The job (mode, policy, trainers expected, shards, when it ends, run directory); its cluster's
  // listen and trainer settings are set from the fields below.
  LocalRunOptions run;
  // HOST:PORT the coordinator listens on (the stores listen on HOST too, on ports of their own);
  // port 0 picks one.
  std::string listen;
  // The host trainers reach this one by (default: HOST, or this machine's name when HOST is
  // 0.0.0.0).
  std::string advertise;
  // One trainer certificate for any name (run_dir/tls/trainer-pool) instead of one per rank.
  bool pool_certificate = false;
};

// HOST:PORT -> (host, port). INVALID_ARGUMENT naming `flag` for anything else.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& flag,
                                                          const std::string& text);

// INVALID_ARGUMENT when HOST:PORT cannot be listened on here (in use, or not this machine's),
// saying why; port 0 is always free. Nothing stays bound.
absl::Status CheckCanListen(const std::string& host, int port);

// Runs the job until every trainer finished, the target or the time limit (RunLocal's ends).
// INVALID_ARGUMENT for a bad or busy --listen, before anything starts.
absl::StatusOr<RunSummary> RunServe(ServeOptions options);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_SERVE_COMMAND_H_
