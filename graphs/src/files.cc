// Whole files in and out, with errors that name the path.
#include "placer/graphs/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "placer/graphs/error.h"

namespace placer {

std::string read_file(const std::string& path) {
  // A directory read as an empty document, and /dev/zero read forever: only a regular file (or a pipe) is input.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw InputError("cannot read '" + path + "': " + (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw InputError("cannot read '" + path + "': read error");
  return out.str();
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

namespace {

// Where a write to `path` lands: a symlink's target (the link stays a link), else the path itself.
std::string write_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    std::string out(real);
    std::free(real);
    return out;
  }
  std::string link(4096, '\0');  // a dangling link: the file it names, made
  const ssize_t n = ::readlink(path.c_str(), link.data(), link.size());
  if (n <= 0 || static_cast<size_t>(n) >= link.size()) return path;
  link.resize(static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return link[0] == '/' || slash == std::string::npos ? link : path.substr(0, slash + 1) + link;
}

// All of `contents` into `fd`, which is closed; errors name `path`. `sync`: on the disk before it returns.
void write_all(int fd, const std::string& path, const std::string& contents, bool sync = false) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n <= 0) {
      const std::string reason = n < 0 ? std::strerror(errno) : "write error";
      ::close(fd);
      throw InputError("cannot write '" + path + "': " + reason);
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw InputError("cannot write '" + path + "': " + reason);
  }
  if (::close(fd) != 0) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
}

// A device or a pipe (/dev/null, /dev/stdout, a fifo) is written into, never replaced.
void write_through(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
  write_all(fd, path, contents);
}

// The directory holding `path` made durable (a rename into it survives a crash); best effort.
void sync_directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  sync_directory(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

void write_atomic(const std::string& path, const std::string& contents, int mode, bool sync) {
  const std::string target = write_target(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw InputError("cannot write '" + path + "': a directory");
    return write_through(target, contents);
  }
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  // Made with its final mode before a byte is written (a secret key is never readable by others, even
  // for a moment); fchmod too, for a temporary left by an earlier process with this pid and for the umask.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode >= 0 ? mode : 0666);
  if (fd < 0) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
  if (mode >= 0 && ::fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    std::remove(tmp.c_str());
    throw InputError("cannot write '" + path + "': cannot set its mode: " + reason);
  }
  try {
    write_all(fd, path, contents, sync);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError("cannot write '" + path + "': " + reason);
  }
  if (sync) sync_directory_of(target);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& contents, int mode) {
  write_atomic(path, contents, mode, false);
}

void write_file_durable(const std::string& path, const std::string& contents) { write_atomic(path, contents, -1, true); }

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return std::remove(path) == 0 ? 0 : -1; }
}  // namespace

bool remove_tree(const std::string& path) noexcept {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  // Children before their directory (FTW_DEPTH); links removed, never followed (FTW_PHYS).
  return ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

}  // namespace placer
