// The number of threads of this process now (Linux: /proc/self/task).
#ifndef SYNCOPATE_TESTS_INTEGRATION_THREAD_COUNT_H_
#define SYNCOPATE_TESTS_INTEGRATION_THREAD_COUNT_H_

#include <filesystem>

namespace syncopate {

inline int ThreadCount() {
  int threads = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++threads;
  }
  return threads;
}

}  // namespace syncopate

#endif  // SYNCOPATE_TESTS_INTEGRATION_THREAD_COUNT_H_
