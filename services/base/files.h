// Small file helpers used by processes to announce readiness and by the CLI to write reports.
#ifndef SYNCOPATE_BASE_FILES_H_
#define SYNCOPATE_BASE_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace syncopate::base {

// Writes `contents` to `path` via a temporary file and rename, so a reader never sees a partial
// file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

// Reads a whole file. NOT_FOUND when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Creates directory `path` and every missing parent (`mkdir -p`, mode 0755). OK when it exists
// already as a directory. Otherwise the status ErrnoToStatus gives for the first component that
// could not be made, e.g. "cannot create a/b: Not a directory"; what was made before stays.
absl::Status MakeDirectories(const std::string& path);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_FILES_H_
