#include "base/flags.h"

#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace syncopate::base {

absl::StatusOr<absl::Duration> ParseDuration(const std::string& text) {
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    if (seconds < 0) return absl::InvalidArgumentError(absl::StrCat("negative duration: ", text));
    return absl::Seconds(seconds);
  }
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad duration '", text, "' (expected e.g. 120s, 2m, 500ms)"));
  }
  return d;
}

absl::StatusOr<double> ParseRate(const std::string& text) {
  // Longest suffixes first, so "mbps" is not read as "bps" after an "m".
  static constexpr std::pair<absl::string_view, double> kUnits[] = {
      {"gbit", 1e9 / 8}, {"mbit", 1e6 / 8}, {"kbit", 1e3 / 8}, {"bit", 1.0 / 8},
      {"gbps", 1e9},     {"mbps", 1e6},     {"kbps", 1e3},     {"bps", 1},
      {"gb", 1e9},       {"mb", 1e6},       {"kb", 1e3},       {"b", 1},
  };
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  double scale = 1;
  absl::string_view number = lower;
  for (const auto& [suffix, factor] : kUnits) {
    if (absl::EndsWith(number, suffix)) {
      number.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid rate '", text, "': use e.g. 100mbit, 1gbit, 12mbps or bytes per second"));
  }
  return value * scale;
}

absl::Status ParseDurations(
    std::initializer_list<std::pair<const std::string*, absl::Duration*>> pairs) {
  for (const auto& [text, out] : pairs) {
    absl::StatusOr<absl::Duration> d = ParseDuration(*text);
    if (!d.ok()) return d.status();
    *out = *d;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ParseDoubleList(const std::string& text) {
  std::vector<double> values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(item, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad number '", item, "' in list '", text, "'"));
    }
    values.push_back(v);
  }
  return values;
}

std::vector<std::string> SplitList(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

}  // namespace syncopate::base
