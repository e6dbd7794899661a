#include "compute/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace syncopate::compute {

std::string DeviceSpellings() { return "cpu, cuda, cuda:N, auto"; }

absl::StatusOr<Device> ParseDevice(const std::string& text) {
  if (text == "cpu") return Device{Device::Kind::kCpu, 0};
  if (text == "auto") return Device{Device::Kind::kAuto, 0};
  if (text == "cuda") return Device{Device::Kind::kCuda, 0};
  absl::string_view ordinal = text;
  int gpu = 0;
  if (absl::ConsumePrefix(&ordinal, "cuda:") && !ordinal.empty() &&
      std::all_of(ordinal.begin(), ordinal.end(), absl::ascii_isdigit) &&
      absl::SimpleAtoi(ordinal, &gpu)) {
    return Device{Device::Kind::kCuda, gpu};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", text, "' (supported: ", DeviceSpellings(), ")"));
}

std::optional<std::string> GpuExpectedBecause() {
  const char* required = std::getenv("SYNCOPATE_REQUIRE_GPU");
  if (required != nullptr && std::strcmp(required, "1") == 0) return "SYNCOPATE_REQUIRE_GPU=1";
  if (required != nullptr && std::strcmp(required, "0") == 0) return std::nullopt;
  if (access("/dev/nvidia0", F_OK) == 0) return "/dev/nvidia0 exists";
  return std::nullopt;
}

}  // namespace syncopate::compute
