// What reading a zip archive's records would allocate, known before any is read: the uncompressed sizes its
// central directory gives them. caffe2::serialize::PyTorchStreamReader allocates a record's size before it
// inflates it, and reads the `version` record as it opens the archive, so the sizes are read here, from the
// directory itself, before a reader is made. Both importers check them (torch.export: ExportImporter::open;
// TorchScript: before torch::jit::load).
//
// Internal to frontends/torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace placer::detail {

// Records may expand to 32 times the file's size, and 64 MiB more: torch writes tensors stored (1x) and code
// deflated (5x at most in the fixtures); a deflated run of zeros expands 1000 times (6 GiB from a 6 MB file).
inline constexpr uint64_t kMaxZipExpansion = 32;
inline constexpr uint64_t kZipExpansionSlack = uint64_t{64} << 20;

// The error for a zip archive (a file, or its bytes in memory) whose records would hold more than `max_bytes` in
// all, or more than a file of its size may expand to (kMaxZipExpansion), naming the record that goes past; or
// for a central directory that does not hold together. None when they fit, and for a file that is no zip
// archive (the archive reader says what it is). `max_label` says what `max_bytes` limits.
std::optional<std::string> zip_size_error(const std::string& path, uint64_t max_bytes, const std::string& max_label);
std::optional<std::string> zip_bytes_size_error(const std::string& bytes, uint64_t max_bytes,
                                                const std::string& max_label);

}  // namespace placer::detail
