// The train config's errors, checked the same way in every agent test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "placer/agent/train.h"
#include "placer/graphs/error.h"

namespace placer::testing_config {

// parse_train_config(text, "bad.yaml") throws InputError naming the file and containing `needle`.
inline void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_train_config(text, "bad.yaml");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
  }
}

}  // namespace placer::testing_config
