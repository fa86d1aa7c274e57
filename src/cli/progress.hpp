#pragma once
// A text progress bar on stderr.
#include <cstdio>
#include <functional>
#include <string>

namespace qgpu::cli {

inline std::function<void(double)> progress_bar(const std::string& label) {
  return [label, last = -1](double f) mutable {
    const int pct = int(f * 100.0 + 0.5);
    if (pct == last) return;
    last = pct;
    const int width = 40, filled = int(f * width + 0.5);
    std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), pct);
    if (pct >= 100) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace qgpu::cli
