// The two Abseil status macros that Debian's Abseil 20220623 does not ship.
#ifndef SYNCOPATE_BASE_STATUS_MACROS_H_
#define SYNCOPATE_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SYNCOPATE_CONCAT_INNER_(a, b) a##b
#define SYNCOPATE_CONCAT_(a, b) SYNCOPATE_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status syncopate_status_ = (expr);             \
    if (!syncopate_status_.ok()) return syncopate_status_; \
  } while (false)

// ASSIGN_OR_RETURN(auto x, MakeX()): assigns the value of a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(SYNCOPATE_CONCAT_(syncopate_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // SYNCOPATE_BASE_STATUS_MACROS_H_
