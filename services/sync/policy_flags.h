// The policy options (sync/policy_options.h) as command-line flags, for the binaries' CLI11
// parsers. Header-only, so that the policy library does not depend on a flag parser: include it
// from a binary that has CLI11 on its include path.
#ifndef SYNCOPATE_SYNC_POLICY_FLAGS_H_
#define SYNCOPATE_SYNC_POLICY_FLAGS_H_

#include <algorithm>
#include <initializer_list>
#include <string>
#include <variant>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "sync/modes.h"
#include "sync/policy_options.h"

namespace syncopate::sync {

// Adds --mode and one flag per policy option to `app`, each writing into `options` and showing
// its declared help and default, except the flags named in `except` ("mode", "seed": a command
// whose own flag of that name serves the policy too).
inline void AddPolicyFlags(CLI::App* app, PolicyOptions* options,
                           std::initializer_list<absl::string_view> except = {}) {
  const auto left_out = [&](absl::string_view flag) {
    return std::find(except.begin(), except.end(), flag) != except.end();
  };
  if (!left_out("mode")) {
    app->add_option("--mode", options->mode,
                    "Sync mode (docs/modes.md; `syncopate modes` lists them): " +
                        absl::StrJoin(SupportedModes(), ", "))
        ->capture_default_str();
  }
  for (const PolicyOptionSpec& spec : PolicyOptionSpecs()) {
    if (left_out(spec.flag)) continue;
    std::visit(
        [&](auto member) {
          CLI::Option* flag = app->add_option(absl::StrCat("--", spec.flag), options->*member,
                                              std::string(spec.help));
          if (!FlagValue(spec, *options).empty()) flag->capture_default_str();
        },
        spec.field);
  }
}

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_FLAGS_H_
