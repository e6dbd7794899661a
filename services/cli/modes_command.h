// `syncopate modes`: the mode table (sync/modes.h) and the policy options (sync/policy_options.h)
// as a user reads them, or as JSON for tools and for the test that checks the chart against them.
#ifndef SYNCOPATE_CLI_MODES_COMMAND_H_
#define SYNCOPATE_CLI_MODES_COMMAND_H_

#include <string>

#include "nlohmann/json.hpp"

namespace syncopate::cli {

// One line per mode (name, family, options, what it does), then every option with its default.
std::string FormatModes();

// {"modes": [{"name", "family", "summary", "paper_aggregation", "default_staleness", "options",
// "planner"}], "options": [{"flag", "chart_key", "help", "type", "default", "choices", "min",
// "min_exclusive", "max"}]}; "default" is null for an option whose default depends on the mode.
nlohmann::json ModesJson();

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_MODES_COMMAND_H_
