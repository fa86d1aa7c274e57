#pragma once
// A number as a message or a name shows it: printf %g (6 significant digits, no trailing zeros: 2.5, 1e+06).
#include <cstdio>
#include <string>

namespace qgpu {

inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace qgpu
