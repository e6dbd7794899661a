#include "sync/policy.h"

namespace syncopate::sync {

void Decisions::Append(Decisions other) {
  close_rounds.insert(close_rounds.end(), other.close_rounds.begin(), other.close_rounds.end());
  grants.insert(grants.end(), other.grants.begin(), other.grants.end());
}

}  // namespace syncopate::sync
