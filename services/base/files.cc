#include "base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace syncopate::base {

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file, AtomicFileWriter::Open(path));
  RETURN_IF_ERROR(file->Append(contents));
  return file->Commit();
}

namespace {

// O_DIRECT wants the buffer, the length and the offset of each write aligned to the device's
// logical block (512 or 4,096 bytes): 4,096 serves either.
constexpr size_t kDirectAlignment = 4096;

}  // namespace

void AtomicFileWriter::FreeBuffer::operator()(char* p) const { std::free(p); }

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                         Mode mode) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  bool direct = mode == Mode::kDirectDurable;
  // 0666 less the umask, as any file the process creates.
  int fd = direct ? open(tmp.c_str(), kFlags | O_DIRECT, 0666) : -1;
  if (fd < 0 && direct && errno == EINVAL) direct = false;  // a file system without O_DIRECT
  if (!direct) fd = open(tmp.c_str(), kFlags, 0666);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", strerror(errno)));
  }
  std::unique_ptr<AtomicFileWriter> file(new AtomicFileWriter(path, mode, fd, direct));
  if (direct && !file->buffer_) return absl::ResourceExhaustedError("no memory for a write buffer");
  return file;
}

AtomicFileWriter::AtomicFileWriter(std::string path, Mode mode, int fd, bool direct)
    : path_(std::move(path)),
      tmp_(absl::StrCat(path_, ".tmp")),
      mode_(mode),
      fd_(fd),
      direct_(direct) {
  if (direct) {
    buffer_.reset(static_cast<char*>(std::aligned_alloc(kDirectAlignment, kDirectBufferBytes)));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) Failed("abandoned", 0).IgnoreError();
}

absl::Status AtomicFileWriter::Failed(const std::string& what, int error) {
  const std::string reason = strerror(error);
  if (fd_ >= 0) {
    close(fd_);
    unlink(tmp_.c_str());
    fd_ = -1;
  }
  return absl::UnavailableError(absl::StrCat(what, " ", tmp_, ": ", reason));
}

absl::Status AtomicFileWriter::WriteAll(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = write(fd_, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && errno == EINVAL && direct_) {
      // A file system that opens with O_DIRECT but refuses such writes (or a short direct write
      // left the offset unaligned): the rest goes through the page cache, synced all the same.
      const int flags = fcntl(fd_, F_GETFL);
      if (flags < 0 || fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
        return Failed("cannot write", errno);
      }
      direct_ = false;
      continue;
    }
    if (wrote < 0) return Failed("cannot write", errno);
    if (wrote == 0) return Failed("cannot write", EIO);
    bytes.remove_prefix(static_cast<size_t>(wrote));
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Append(absl::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(tmp_, " is closed"));
  written_ += bytes.size();
  if (!buffer_) return WriteAll(bytes);
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), kDirectBufferBytes - buffered_);
    std::memcpy(buffer_.get() + buffered_, bytes.data(), n);
    buffered_ += n;
    bytes.remove_prefix(n);
    if (buffered_ == kDirectBufferBytes) {
      RETURN_IF_ERROR(WriteAll(absl::string_view(buffer_.get(), buffered_)));
      buffered_ = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(tmp_, " is closed"));
  if (buffered_ > 0) {
    // The last block goes out whole, padded; the file is then cut back to its length.
    const size_t padded = (buffered_ + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
    std::memset(buffer_.get() + buffered_, 0, padded - buffered_);
    RETURN_IF_ERROR(WriteAll(absl::string_view(buffer_.get(), padded)));
    buffered_ = 0;
    if (ftruncate(fd_, static_cast<off_t>(written_)) != 0) return Failed("cannot truncate", errno);
  }
  const bool durable = mode_ == Mode::kDirectDurable;
  if (durable && fdatasync(fd_) != 0) return Failed("cannot sync", errno);
  const int closed = close(fd_);
  const int error = errno;
  fd_ = -1;
  if (closed != 0) {
    unlink(tmp_.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp_, ": ", strerror(error)));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string reason = strerror(errno);
    unlink(tmp_.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp_, ": ", reason));
  }
  if (durable) {
    // The rename itself is in the folder's entries.
    const size_t slash = path_.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
    const int dir = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || fsync(dir) != 0) {
      const std::string reason = strerror(errno);
      if (dir >= 0) close(dir);
      return absl::DataLossError(absl::StrCat(path_, " is in place, but its folder ", folder,
                                              " could not be synced: ", reason));
    }
    close(dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("cannot create a directory with no name");
  // Every prefix that ends before a '/', then the whole path: a, a/b, a/b/c.
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      const int error = errno;
      return absl::ErrnoToStatus(error, absl::StrCat("cannot create ", prefix));
    }
    if (end == std::string::npos) break;
  }
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("cannot create ", path));
  }
  if (!S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", strerror(ENOTDIR)));
  }
  return absl::OkStatus();
}

}  // namespace syncopate::base
