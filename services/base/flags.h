// Parsers for flag values shared by every binary: durations ("120s", "500ms"), link rates
// ("100mbit") and lists ("1,1,2,4").
#ifndef SYNCOPATE_BASE_FLAGS_H_
#define SYNCOPATE_BASE_FLAGS_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace syncopate::base {

// --slowdown (a trainer's emulated slowness, in every binary that takes it) lies in [1, this].
inline constexpr double kMaxSlowdown = 1000.0;

// Accepts Go-style durations ("90s", "1m30s", "250ms"); a bare number means seconds.
// INVALID_ARGUMENT for anything else or for negative durations.
absl::StatusOr<absl::Duration> ParseDuration(const std::string& text);

// ParseDuration of each (text, out) pair, in order, into its `out`; the first error stops it (the
// pairs before it are parsed already).
absl::Status ParseDurations(
    std::initializer_list<std::pair<const std::string*, absl::Duration*>> pairs);

// "1,1,2,4" -> {1,1,2,4}. INVALID_ARGUMENT on an empty item or a non-number.
absl::StatusOr<std::vector<double>> ParseDoubleList(const std::string& text);

// A link rate in tc's units, as bytes per second: "100mbit" (10^6 bits/s), "1gbit", "500kbit",
// "12mbps" / "12MB" (10^6 bytes/s), "800kbps", or a bare number of bytes/s. Case-insensitive.
// INVALID_ARGUMENT for anything else, or a rate that is not positive and finite.
absl::StatusOr<double> ParseRate(const std::string& text);

// "a:1,b:2" -> {"a:1","b:2"}; empty items are skipped.
std::vector<std::string> SplitList(const std::string& text);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_FLAGS_H_
