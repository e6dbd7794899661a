#include "cli/modes_command.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sync/modes.h"
#include "sync/policy_options.h"

namespace syncopate::cli {
namespace {

// "integer", "number" or "string": the option's JSON-schema type.
absl::string_view TypeOf(const sync::PolicyOptionSpec& spec) {
  return std::visit(
      [](auto member) -> absl::string_view {
        using T = std::decay_t<decltype(sync::PolicyOptions{}.*member)>;
        if constexpr (std::is_same_v<T, std::string>) return "string";
        if constexpr (std::is_floating_point_v<T>) return "number";
        return "integer";
      },
      spec.field);
}

std::vector<std::string> OptionsOf(const sync::Mode& mode) {
  std::vector<std::string> flags;
  for (const sync::PolicyOptionSpec& spec : sync::PolicyOptionSpecs()) {
    if (mode.reads(spec.flag)) flags.push_back(absl::StrCat("--", spec.flag));
  }
  return flags;
}

}  // namespace

std::string FormatModes() {
  std::string out = absl::StrFormat("%-13s %-13s %s\n", "MODE", "FAMILY", "WHAT IT DOES");
  for (const sync::Mode& mode : sync::Modes()) {
    absl::StrAppendFormat(&out, "%-13s %-13s %s\n%28s%s\n", mode.name,
                          sync::FamilyName(mode.push_mode), mode.summary, "",
                          absl::StrJoin(OptionsOf(mode), " "));
  }
  absl::StrAppend(&out, "\nOPTION (default)\n");
  const sync::PolicyOptions defaults;
  for (const sync::PolicyOptionSpec& spec : sync::PolicyOptionSpecs()) {
    const std::string value = sync::FlagValue(spec, defaults);
    absl::StrAppendFormat(&out, "  --%s (%s)\n      %s\n", spec.flag,
                          value.empty() ? "the mode's" : value, spec.help);
  }
  absl::StrAppend(&out, "\nEvery mode, its rule and when to pick it: docs/modes.md\n");
  return out;
}

nlohmann::json ModesJson() {
  nlohmann::json out = {{"modes", nlohmann::json::array()}, {"options", nlohmann::json::array()}};
  for (const sync::Mode& mode : sync::Modes()) {
    out["modes"].push_back(
        {{"name", std::string(mode.name)},
         {"family", std::string(sync::FamilyName(mode.push_mode))},
         {"summary", std::string(mode.summary)},
         {"paper_aggregation", std::string(sync::AggregationName(mode.paper_aggregation))},
         {"default_staleness", mode.default_staleness},
         {"options", OptionsOf(mode)},
         {"planner", std::string(mode.planner)}});
  }
  const sync::PolicyOptions defaults;
  for (const sync::PolicyOptionSpec& spec : sync::PolicyOptionSpecs()) {
    nlohmann::json o = {{"flag", spec.flag},       {"chart_key", spec.chart_key},
                        {"help", spec.help},       {"type", TypeOf(spec)},
                        {"choices", spec.choices}, {"min_exclusive", spec.min_exclusive},
                        {"default", nullptr},      {"min", nullptr},
                        {"max", nullptr}};
    const std::string value = sync::FlagValue(spec, defaults);
    if (!value.empty()) {
      o["default"] =
          TypeOf(spec) == "string" ? nlohmann::json(value) : nlohmann::json::parse(value);
    }
    if (spec.min) o["min"] = *spec.min;
    if (spec.max) o["max"] = *spec.max;
    out["options"].push_back(std::move(o));
  }
  return out;
}

}  // namespace syncopate::cli
