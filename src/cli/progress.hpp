#pragma once
// A text progress bar on stderr (drawn only when stderr is a terminal: a log file gets no \r lines), and the rule
// that any later message starts on a line of its own.
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

namespace qgpu::cli {

// True while a progress bar has written a partial line (no newline yet) to stderr.
inline bool& progress_line_open() {
  static bool open = false;
  return open;
}

// Ends an open progress line so that the next message (an error, a warning) starts at column 0.
inline void end_progress_line() {
  if (!progress_line_open()) return;
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  progress_line_open() = false;
}

inline std::function<void(double)> progress_bar(const std::string& label) {
  static const bool terminal = isatty(fileno(stderr)) == 1;
  if (!terminal) return [](double) {};
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

// Runs a command body; whatever it throws leaves stderr at the start of a line first.
template <class F> void run_command(F&& body) {
  try {
    body();
  } catch (...) {
    end_progress_line();
    throw;
  }
}

}  // namespace qgpu::cli
