#include "base/ready_file.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "nlohmann/json.hpp"

namespace syncopate::base {

absl::Status WriteReadyFile(const std::string& path, const ReadyInfo& info) {
  if (path.empty()) return absl::OkStatus();
  nlohmann::json j = {
      {"grpc_port", info.grpc_port}, {"metrics_port", info.metrics_port}, {"pid", getpid()}};
  return WriteFileAtomically(path, j.dump());
}

absl::StatusOr<ReadyInfo> WaitForReadyFile(const std::string& path, absl::Time deadline) {
  while (true) {
    absl::StatusOr<std::string> text = ReadFile(path);
    if (text.ok()) {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("grpc_port")) {
        return absl::InvalidArgumentError(absl::StrCat(path, " is not a ready file"));
      }
      ReadyInfo info;
      info.grpc_port = j.value("grpc_port", 0);
      info.metrics_port = j.value("metrics_port", 0);
      info.pid = j.value("pid", 0);
      return info;
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("timed out waiting for ", path));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace syncopate::base
