#include "base/logging.h"

#include "spdlog/sinks/stdout_sinks.h"

namespace syncopate::base {

void InitLogging(const std::string& process_name, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt(process_name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace syncopate::base
