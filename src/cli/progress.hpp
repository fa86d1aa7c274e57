#pragma once
// A text progress bar on stderr.
#include <cstdio>
#include <functional>
#include <string>

namespace qgpu::cli {

// True while a progress bar line is unfinished on stderr (whatever is printed next must start a new line).
inline bool& progress_line_open() {
  static bool open = false;
  return open;
}

// Ends an unfinished progress bar line, so that a message printed next starts on its own line.
inline void end_progress_line() {
  if (progress_line_open()) std::fputc('\n', stderr);
  progress_line_open() = false;
}

inline std::function<void(double)> progress_bar(const std::string& label) {
  return [label, last = -1](double f) mutable {
    const int pct = int(f * 100.0 + 0.5);
    if (pct == last) return;
    last = pct;
    const int width = 40, filled = int(f * width + 0.5);
    std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), pct);
    progress_line_open() = true;
    if (pct >= 100) end_progress_line();
    std::fflush(stderr);
  };
}

}  // namespace qgpu::cli
