#pragma once
// Wall time by named stage of the work on one thread, for a caller that asks (the service's Server-Timing header):
//   timing::Recording rec;                 // starts recording on this thread
//   { timing::Stage s("compute"); ... }    // library code marks its stages
//   rec.stages()                           // {("compute", ms), ...} in order of first use
// Stages are exclusive: a Stage opened inside another pauses the outer one, so the stage times add up to at most
// the recorded wall time (the rest is work no stage claimed). Without a Recording on the thread a Stage costs one
// thread-local read. A Recording opened inside another hides the outer one until it ends.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::timing {

class Recording {
 public:
  Recording();
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // (name, milliseconds) of every stage used so far, in order of first use.
  std::vector<std::pair<std::string, double>> stages() const;
  // Milliseconds since the recording started.
  double elapsed_ms() const;

  // Used by Stage: makes `name` (a string literal, or nullptr: no stage) the current stage, charging the time since
  // the last switch to the previous one; returns the previous stage.
  const char* switch_to(const char* name);

 private:
  using Clock = std::chrono::steady_clock;
  Recording* outer_;
  Clock::time_point start_, last_;
  const char* current_ = nullptr;
  std::vector<std::pair<std::string, double>> totals_;
};

class Stage {
 public:
  explicit Stage(const char* name);  // a string literal
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

 private:
  Recording* rec_;
  const char* previous_ = nullptr;
};

// The "Server-Timing" header value for stages and a total: "name;dur=1.234, ..., other;dur=..., total;dur=...",
// where other = total - sum of the stages (omitted when below 0.001 ms). Names must be HTTP tokens.
std::string server_timing(const std::vector<std::pair<std::string, double>>& stages, double total_ms);

}  // namespace qgpu::timing
