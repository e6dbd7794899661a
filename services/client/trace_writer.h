// An append-only JSON-lines record of what a trainer did and when (wall-clock microseconds), so
// tests and users can check guarantees after a run: clocks started, pushes, snapshot checksums.
#ifndef SYNCOPATE_CLIENT_TRACE_WRITER_H_
#define SYNCOPATE_CLIENT_TRACE_WRITER_H_

#include <cstdio>
#include <string>

#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

namespace syncopate::client {

// Thread-safe (a session's communication and evaluation threads record too). A writer with an
// empty path records nothing.
class TraceWriter {
 public:
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Writes {"event": event, "t_us": now, ...fields} and flushes the line.
  void Record(const std::string& event, nlohmann::json fields = nlohmann::json::object());

 private:
  std::FILE* file_ = nullptr;  // set once; lines are written under mu_
  absl::Mutex mu_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_TRACE_WRITER_H_
