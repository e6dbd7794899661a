// Logging is spdlog; this sets one consistent format for every Syncopate process.
#ifndef SYNCOPATE_BASE_LOGGING_H_
#define SYNCOPATE_BASE_LOGGING_H_

#include <string>

#include "spdlog/spdlog.h"

namespace syncopate::base {

// Logs to stderr as "<time> <level> <process> message"; `level` is an spdlog level name
// (trace, debug, info, warn, error). Call once at the start of main.
void InitLogging(const std::string& process_name, const std::string& level = "info");

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_LOGGING_H_
