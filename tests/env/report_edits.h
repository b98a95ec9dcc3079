// A fidelity report's JSON edited by hand, and the reader's refusals of it
// (fidelity_test.cc, review8_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "placer/env/fidelity.h"
#include "placer/graphs/error.h"

namespace placer::testing {

// Reading `json` as a report must fail with an InputError whose message has `expected` in it.
inline void expect_rejected(const std::string& json, const std::string& expected) {
  try {
    FidelityReport::from_json(json);
    ADD_FAILURE() << "accepted; expected an error with: " << expected;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// `text` with its first `from` replaced by `to` (a failure where `from` is not in it).
inline std::string replaced_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

}  // namespace placer::testing
