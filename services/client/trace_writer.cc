#include "client/trace_writer.h"

#include "absl/time/clock.h"

namespace syncopate::client {

TraceWriter::TraceWriter(const std::string& path) {
  if (!path.empty()) file_ = std::fopen(path.c_str(), "a");
}

TraceWriter::~TraceWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TraceWriter::Record(const std::string& event, nlohmann::json fields) {
  if (file_ == nullptr) return;
  fields["event"] = event;
  fields["t_us"] = absl::ToUnixMicros(absl::Now());
  const std::string line = fields.dump() + "\n";
  absl::MutexLock lock(&mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace syncopate::client
