// A zip archive's records' uncompressed sizes, from its central directory: see zip_sizes.h.
#include "zip_sizes.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "placer/graphs/error.h"

namespace placer::detail {

namespace {

// Reads n bytes at an offset (fewer at the end).
using Read = std::function<std::string(uint64_t offset, uint64_t n)>;

constexpr uint64_t kEnd = 0x06054b50, kEnd64Locator = 0x07064b50, kEnd64 = 0x06064b50, kEntry = 0x02014b50;
constexpr size_t kEndBytes = 22, kEntryBytes = 46;
constexpr uint64_t kMaxDirectoryBytes = uint64_t{256} << 20;

uint64_t le(const std::string& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

[[noreturn]] void malformed(const std::string& what) { throw std::runtime_error(what); }

struct Directory {
  uint64_t offset = 0, size = 0, entries = 0;
};

// Where the central directory is, from the end-of-directory record (the last in the file's final 64 KiB, as
// miniz finds it) or its zip64 form; none without one.
std::optional<Directory> find_directory(uint64_t file_bytes, const Read& read) {
  const uint64_t tail_n = std::min<uint64_t>(file_bytes, kEndBytes + 65535);
  const std::string tail = read(file_bytes - tail_n, tail_n);
  if (tail.size() < kEndBytes) return std::nullopt;
  size_t at = std::string::npos;
  for (size_t i = tail.size() - kEndBytes + 1; i-- > 0;)
    if (le(tail, i, 4) == kEnd) {
      at = i;
      break;
    }
  if (at == std::string::npos) return std::nullopt;
  Directory d{le(tail, at + 16, 4), le(tail, at + 12, 4), le(tail, at + 10, 2)};
  const uint64_t end = file_bytes - tail_n + at;
  const std::string locator = end >= 20 ? read(end - 20, 20) : std::string();
  if (locator.size() == 20 && le(locator, 0, 4) == kEnd64Locator) {
    const std::string end64 = read(le(locator, 8, 8), 56);
    if (end64.size() < 56 || le(end64, 0, 4) != kEnd64) malformed("its zip64 end-of-directory record is missing");
    d = Directory{le(end64, 48, 8), le(end64, 40, 8), le(end64, 32, 8)};
  }
  if (d.offset > file_bytes || d.size > file_bytes - d.offset || d.size > kMaxDirectoryBytes)
    malformed(concat("its central directory (", d.size, " bytes at ", d.offset, ") is not within the file"));
  return d;
}

// The uncompressed size in an entry's zip64 extra field (the first of its values).
uint64_t zip64_size(const std::string& extra, const std::string& name) {
  for (size_t at = 0; at + 4 <= extra.size();) {
    const uint64_t id = le(extra, at, 2), n = le(extra, at + 2, 2);
    if (id == 1 && n >= 8 && at + 12 <= extra.size()) return le(extra, at + 4, 8);
    at += 4 + n;
  }
  malformed("record '" + name + "' has no zip64 size");
}

struct Record {
  std::string name;   // as the archive reader names it: without the archive's top folder ("data/0")
  uint64_t size = 0;  // uncompressed
};

std::vector<Record> directory_records(const Directory& d, const Read& read) {
  const std::string dir = read(d.offset, d.size);
  if (dir.size() != d.size) malformed("its central directory is cut short");
  std::vector<Record> records;
  size_t at = 0;
  for (uint64_t e = 0; e < d.entries; ++e) {
    if (at + kEntryBytes > dir.size() || le(dir, at, 4) != kEntry)
      malformed(concat("entry ", e, " of its central directory is broken"));
    const size_t name_n = le(dir, at + 28, 2), extra_n = le(dir, at + 30, 2), comment_n = le(dir, at + 32, 2);
    if (at + kEntryBytes + name_n + extra_n + comment_n > dir.size())
      malformed(concat("entry ", e, " of its central directory is cut short"));
    std::string name = dir.substr(at + kEntryBytes, name_n);
    uint64_t size = le(dir, at + 24, 4);
    if (size == 0xFFFFFFFF) size = zip64_size(dir.substr(at + kEntryBytes + name_n, extra_n), name);
    if (const auto slash = name.find('/'); slash != std::string::npos) name.erase(0, slash + 1);
    records.push_back({std::move(name), size});
    at += kEntryBytes + name_n + extra_n + comment_n;
  }
  return records;
}

std::optional<std::string> size_error(uint64_t file_bytes, const Read& read, uint64_t max_bytes,
                                      const std::string& max_label) {
  std::vector<Record> records;
  try {
    const std::optional<Directory> d = find_directory(file_bytes, read);
    if (!d) return std::nullopt;
    records = directory_records(*d, read);
  } catch (const std::runtime_error& e) {
    return std::string("not a zip archive that holds together: ") + e.what();
  }
  const uint64_t expansion = file_bytes > (std::numeric_limits<uint64_t>::max() - kZipExpansionSlack) / kMaxZipExpansion
                                 ? std::numeric_limits<uint64_t>::max()
                                 : file_bytes * kMaxZipExpansion + kZipExpansionSlack;
  const uint64_t limit = std::min(max_bytes, expansion);
  uint64_t total = 0;
  for (const Record& r : records) {
    uint64_t sum = 0;
    const bool wraps = __builtin_add_overflow(total, r.size, &sum);
    if (wraps || sum > limit) {
      const std::string why = limit == max_bytes ? max_label
                                                 : concat("for a file of ", file_bytes, " bytes (", kMaxZipExpansion,
                                                          " times its size, and 64 MiB)");
      return concat("record '", r.name, "' holds ", r.size, " bytes uncompressed, bringing the archive's records to ",
                    wraps ? std::string("over 2^64") : std::to_string(sum), " bytes, over the limit of ", limit,
                    " bytes ", why);
    }
    total = sum;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> zip_size_error(const std::string& path, uint64_t max_bytes, const std::string& max_label) {
  std::ifstream in(path, std::ios::binary);
  if (!in.seekg(0, std::ios::end)) return std::nullopt;
  const auto file_bytes = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  const Read read = [&](uint64_t offset, uint64_t n) {
    std::string out;
    if (offset >= file_bytes) return out;
    out.resize(std::min(n, file_bytes - offset));
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    return out;
  };
  return size_error(file_bytes, read, max_bytes, max_label);
}

std::optional<std::string> zip_bytes_size_error(const std::string& bytes, uint64_t max_bytes,
                                                const std::string& max_label) {
  const Read read = [&](uint64_t offset, uint64_t n) {
    return offset >= bytes.size() ? std::string() : bytes.substr(offset, n);
  };
  return size_error(bytes.size(), read, max_bytes, max_label);
}

}  // namespace placer::detail
