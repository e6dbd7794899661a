#include "base/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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
