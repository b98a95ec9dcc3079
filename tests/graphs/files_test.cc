// Whole-file helpers and remove_tree (our replacement for std::filesystem::remove_all).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "placer/graphs/files.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("placer_files_" + name + "_" + std::to_string(::getpid()));
}

TEST(Files, RemoveTreeRemovesNestedDirectoriesAndNeverFollowsLinks) {
  const fs::path root = scratch("tree");
  const fs::path outside = scratch("outside");
  fs::create_directories(root / "a" / "b" / "c");
  fs::create_directories(outside);
  std::ofstream(root / "a" / "f.txt") << "x";
  std::ofstream(root / "a" / "b" / "c" / "g.bin") << "y";
  std::ofstream(outside / "keep.txt") << "kept";
  fs::create_directory_symlink(outside, root / "a" / "link");
  EXPECT_TRUE(remove_tree(root));
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside / "keep.txt")) << "the link's target must survive";
  EXPECT_TRUE(remove_tree(outside.string()));
  EXPECT_FALSE(fs::exists(outside));
}

// `-o /dev/null` replaced the device with a regular file (as root), and `-o link.json`
// replaced the link with a file, leaving its target as it was.
TEST(Files, WritesGoThroughLinksAndIntoDevicesWithoutReplacingThem) {
  const fs::path dir = scratch("write");
  fs::create_directories(dir);
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink("target.json", dir / "link.json");
  write_file_atomic((dir / "link.json").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_file((dir / "target.json").string()), "new");
  fs::create_symlink("made.json", dir / "dangling.json");  // a link to a file not yet there: the file is made
  write_file_atomic((dir / "dangling.json").string(), "made");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(read_file((dir / "made.json").string()), "made");
  write_file_atomic("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (fs::exists("/dev/full")) {
    try {
      write_file_atomic("/dev/full", std::string(1 << 16, 'x'));
      ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write '/dev/full': No space left on device"), std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  try {
    write_file_atomic(dir.string(), "x");
    ADD_FAILURE() << "a directory was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(remove_tree(dir));
}

// `placer keygen --out P` wrote P.secret with the umask's mode (0644 under umask 022) and chmodded it
// afterwards: readable by any local user in between, and for good where the chmod failed unnoticed.
TEST(Files, AModeGivenIsTheFilesModeFromItsCreation) {
  const fs::path dir = scratch("mode");
  fs::create_directories(dir);
  const ::mode_t old_mask = ::umask(0);  // the most permissive umask: the mode must not come from it
  const std::string secret = (dir / "k.secret").string();
  write_file_atomic(secret, "s3cret\n", 0600);
  EXPECT_EQ(fs::status(secret).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(secret, fs::perms::all);  // rewritten over a file with a wider mode: narrowed again
  write_file_atomic(secret, "again\n", 0600);
  EXPECT_EQ(fs::status(secret).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(read_file(secret), "again\n");
  ::umask(022);
  write_file_atomic((dir / "plain.json").string(), "{}");  // no mode: 0666 less the umask
  EXPECT_EQ(fs::status(dir / "plain.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  ::umask(old_mask);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "a temporary was left: " << e.path();
  EXPECT_TRUE(remove_tree(dir));
}

// A durable write is an atomic write synced to the disk (file and directory entry): job records and
// checkpoints, read back after a crash. It replaces, leaves no temporary, and takes a bare file name
// (its directory the current one).
TEST(Files, ADurableWriteReplacesTheFileAndLeavesNoTemporary) {
  const fs::path dir = scratch("durable");
  fs::create_directories(dir);
  const std::string record = (dir / "job.json").string();
  write_file_durable(record, "{\"state\": \"queued\"}");
  write_file_durable(record, "{\"state\": \"done\"}");
  EXPECT_EQ(read_file(record), "{\"state\": \"done\"}");
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  write_file_durable("bare.json", "{}");
  fs::current_path(old);
  EXPECT_EQ(read_file((dir / "bare.json").string()), "{}");
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "a temporary was left: " << e.path();
  EXPECT_THROW(write_file_durable((dir / "missing" / "x.json").string(), "{}"), InputError);
  EXPECT_TRUE(remove_tree(dir));
}

TEST(Files, RemoveTreeOfAMissingPathOrAFileIsFine) {
  EXPECT_TRUE(remove_tree(scratch("missing")));
  const fs::path file = scratch("file");
  std::ofstream(file) << "z";
  EXPECT_TRUE(remove_tree(file));
  EXPECT_FALSE(fs::exists(file));
}

// std::filesystem::remove_all crashed (a jump to address 0) on the lent H100
// machine: its calls bound to the copy of std::filesystem that libtorch.so
// exports. The sources must use remove_tree instead.
TEST(Files, NoSourceCallsStdFilesystemRemoveAll) {
  const std::regex call(R"((std::filesystem|fs)::remove_all\s*\()");
  int scanned = 0;
  for (const char* dir : {"graphs", "frontends", "runtime", "env", "agent", "service", "app", "bench", "tests"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(PLACER_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      if (e.path().filename() == "files_test.cc") continue;
      ++scanned;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        EXPECT_FALSE(std::regex_search(line, call)) << e.path().string() << ":" << n << ": " << line;
    }
  }
  EXPECT_GT(scanned, 100);
}

}  // namespace
}  // namespace placer
