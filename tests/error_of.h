// error_of<E>(body): runs body and returns the message of the E it throws.
// Throwing nothing, or another exception, fails the calling test (and returns
// ""), so a check on the message can never pass because nothing was thrown.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace placer::testing {

template <class E, class F>
std::string error_of(F&& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

}  // namespace placer::testing
