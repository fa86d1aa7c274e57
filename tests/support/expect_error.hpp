#pragma once
// Runs f and expects an exception of type E whose message contains every needle (a clear error, not just any).
#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>

namespace qgpu::test {

template <class E, class F> void expect_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace qgpu::test
