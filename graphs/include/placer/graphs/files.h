// Whole-file helpers that throw InputError naming the path.
#pragma once

#include <string>

#include "placer/graphs/error.h"

namespace placer {

std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& contents);  // tmp + rename

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
