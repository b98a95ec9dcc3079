// A test's own folder under the test temp folder, named for the test and the
// process (so parallel ctest processes never share one), made empty on entry
// and removed with everything in it when the object goes out of scope. Tests
// that write files use it so that runs leave nothing behind (thirteen runs
// of `make test` once left ~1 GB of run folders in /tmp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "placer/graphs/files.h"

namespace placer {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_((std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()))).string()) {
    remove_tree(path_);
    std::filesystem::create_directories(path_);
  }
  // remove_tree, not std::filesystem's remove_all (graphs/files.h says why); noexcept.
  ~ScratchDir() { remove_tree(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& file) const { return path_ + "/" + file; }

 private:
  std::string path_;
};

}  // namespace placer
