#pragma once
// An environment variable set for one scope (a test's knob such as QGPU_SSB_DEVICE_BUDGET_BYTES), unset after it.
#include <cstdlib>
#include <string>

namespace qgpu::test {

struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace qgpu::test
