// Small file helpers used by processes to announce readiness and by the CLI to write reports.
#ifndef SYNCOPATE_BASE_FILES_H_
#define SYNCOPATE_BASE_FILES_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace syncopate::base {

// Writes `contents` to `path` via a temporary file and rename, so a reader never sees a partial
// file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

// A file written piece by piece and published whole: what Append writes goes to `path`.tmp, and
// Commit renames that to `path`, so a reader never sees a partial file. Dropped without a Commit
// (an error on the way), the temporary file is removed and `path` is untouched. Not thread-safe.
class AtomicFileWriter {
 public:
  enum class Mode {
    // Through the page cache. Commit returns once the file is renamed: a crash of the machine
    // (not of the process) soon after may lose it.
    kCached,
    // Straight to the disk (O_DIRECT, through one aligned buffer of kDirectBufferBytes), and
    // Commit returns once the bytes and the rename are on the disk (fdatasync, then fsync of the
    // folder). For large files written once and rarely read back (checkpoints): the page cache
    // does not fill with them, and other threads' page faults do not wait on its growth. Where
    // the file system cannot (tmpfs), the writes go through the page cache, with the same syncs.
    kDirectDurable,
  };
  static constexpr size_t kDirectBufferBytes = 4 << 20;

  // Creates (or truncates) `path`.tmp. UNAVAILABLE, naming it and the reason, when it cannot.
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                                Mode mode = Mode::kCached);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Writes all of `bytes` after what was written before. UNAVAILABLE on a write error (a full
  // disk); the file is then abandoned.
  absl::Status Append(absl::string_view bytes);
  // Publishes the file at `path`. At most once. UNAVAILABLE when a write, the sync or the rename
  // failed: `path` keeps what it held. DATA_LOSS (kDirectDurable) when the file is in place at
  // `path` but the sync of its folder failed: a crash of the machine may still lose it.
  absl::Status Commit();

  // Whether the writes go around the page cache (kDirectDurable where the file system allows it).
  bool direct() const { return direct_; }

 private:
  struct FreeBuffer {
    void operator()(char* p) const;
  };

  AtomicFileWriter(std::string path, Mode mode, int fd, bool direct);
  absl::Status WriteAll(absl::string_view bytes);  // to fd_, as they are
  // Closes and removes the temporary file; UNAVAILABLE naming `what` and errno `error`.
  absl::Status Failed(const std::string& what, int error);

  const std::string path_;
  const std::string tmp_;
  const Mode mode_;
  int fd_;  // -1 once committed or abandoned
  // O_DIRECT (until a write refuses it): whole blocks go out of `buffer_`; Commit pads the last
  // one and truncates the file.
  bool direct_;
  std::unique_ptr<char, FreeBuffer> buffer_;
  size_t buffered_ = 0;
  size_t written_ = 0;  // bytes of the file so far (direct: the buffered ones too)
};

// Reads a whole file. NOT_FOUND when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Creates directory `path` and every missing parent (`mkdir -p`, mode 0755). OK when it exists
// already as a directory. Otherwise the status ErrnoToStatus gives for the first component that
// could not be made, e.g. "cannot create a/b: Not a directory"; what was made before stays.
absl::Status MakeDirectories(const std::string& path);

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_FILES_H_
