// Whole-file helpers that throw InputError naming the path.
#pragma once

#include <string>

namespace placer {

std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& contents);  // tmp + rename

}  // namespace placer
