// Which compute device a trainer asks for, as its --device flag spells it. Free of the backends
// (no BLAS, no CUDA), so launchers such as `syncopate local` can check the flag before they start
// anything.
#ifndef SYNCOPATE_COMPUTE_DEVICE_H_
#define SYNCOPATE_COMPUTE_DEVICE_H_

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

}  // namespace syncopate::compute

#endif  // SYNCOPATE_COMPUTE_DEVICE_H_
