// Which compute device a trainer asks for, as its --device flag spells it. Free of the backends
// (no BLAS, no CUDA), so launchers such as `syncopate local` can check the flag before they start
// anything.
#ifndef SYNCOPATE_COMPUTE_DEVICE_H_
#define SYNCOPATE_COMPUTE_DEVICE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace syncopate::compute {

struct Device {
  enum class Kind { kCpu, kCuda, kAuto };
  Kind kind = Kind::kCpu;
  // kCuda: the GPU's ordinal among those CUDA_VISIBLE_DEVICES shows; kAuto tries GPU 0.
  int gpu = 0;
};

// The spellings ParseDevice accepts, for help and error texts: "cpu, cuda, cuda:N, auto".
std::string DeviceSpellings();

// "cpu"; "cuda" (GPU 0) or "cuda:N" (GPU N); "auto" (GPU 0 when usable, else the CPU).
// INVALID_ARGUMENT naming the spellings for anything else (an unknown name, "cuda:" without a
// non-negative number).
absl::StatusOr<Device> ParseDevice(const std::string& text);

// Why this host should have a usable NVIDIA GPU, judged without any CUDA code:
// "SYNCOPATE_REQUIRE_GPU=1" in the environment, or "/dev/nvidia0 exists" (the driver made its
// device node); nullopt when neither holds, or when SYNCOPATE_REQUIRE_GPU=0 says outright that no
// GPU is to be used here. Tests skip for want of a GPU only where this is nullopt, so that a
// GPU our CUDA code fails to use is a failure, never a skip that hides it.
std::optional<std::string> GpuExpectedBecause();

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_DEVICE_H_
