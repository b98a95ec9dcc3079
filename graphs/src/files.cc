// Whole files in and out, with errors that name the path.
#include "placer/graphs/files.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

void write_file_atomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError("cannot write '" + path + "': write error");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError("cannot write '" + path + "': " + reason);
  }
}

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
