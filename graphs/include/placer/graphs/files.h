// Whole-file helpers that throw InputError naming the path.
#pragma once

#include <filesystem>
#include <string>

#include "placer/graphs/error.h"

namespace placer {

std::string read_file(const std::string& path);
// A regular file: written to a temporary beside it, then renamed over it (never half
// written). A symlink: its target so written, the link kept. A device or a pipe
// (/dev/null, a fifo): written into, never replaced; its errors (/dev/full: no space) thrown.
// `mode` (e.g. 0600 for a secret): the new file's permission bits exactly, from its creation on;
// -1: 0666 less the umask, as any new file.
void write_file_atomic(const std::string& path, const std::string& contents, int mode = -1);
// The same, and on the disk before it returns (the file, then its directory's entry): for
// records a restart reads back (job records, checkpoints), which a crash must not leave empty.
void write_file_durable(const std::string& path, const std::string& contents);
// A directory's entries on the disk (a rename into it survives a crash); best effort.
void sync_directory(const std::string& dir);

// Removes a file or a directory tree (a missing path is no error); false, with
// errno set, where something could not be removed. Use it instead of
// std::filesystem::remove_all: torch's wheel exports its own copy of
// std::filesystem from libtorch.so, and on a machine whose compiler is newer than
// the wheel's, calls bind to that copy and remove_all jumps to a null address
// (seen on the lent H100 machine: docs/gpu.md). glibc's nftw has no such twin.
bool remove_tree(const std::string& path) noexcept;
inline bool remove_tree(const std::filesystem::path& path) noexcept { return remove_tree(path.string()); }

// Errors of a file's contents, prefixed with its path (the error type kept).
template <class Error, class F>
auto with_path(const std::string& path, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const GraphError& e) {
    throw GraphError(path + ": " + e.what());
  } catch (const PlacementError& e) {
    throw PlacementError(path + ": " + e.what());
  } catch (const InputError& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace placer
