#include "core/stage_timing.hpp"

#include <cstdio>
#include <cstring>

namespace qgpu::timing {

namespace {
thread_local Recording* active = nullptr;
}

Recording::Recording() : outer_(active), start_(Clock::now()), last_(start_) { active = this; }

Recording::~Recording() { active = outer_; }

const char* Recording::switch_to(const char* name) {
  const Clock::time_point now = Clock::now();
  if (current_) {
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    bool found = false;
    for (auto& [n, t] : totals_)
      if (n == current_) {
        t += ms;
        found = true;
        break;
      }
    if (!found) totals_.emplace_back(current_, ms);
  }
  last_ = now;
  return std::exchange(current_, name);
}

std::vector<std::pair<std::string, double>> Recording::stages() const {
  std::vector<std::pair<std::string, double>> out = totals_;
  if (current_) {  // a stage still open: charged up to now
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - last_).count();
    bool found = false;
    for (auto& [n, t] : out)
      if (n == current_) {
        t += ms;
        found = true;
      }
    if (!found) out.emplace_back(current_, ms);
  }
  return out;
}

double Recording::elapsed_ms() const {
  return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
}

Stage::Stage(const char* name) : rec_(active) {
  if (rec_) previous_ = rec_->switch_to(name);
}

Stage::~Stage() {
  if (rec_) rec_->switch_to(previous_);
}

std::string server_timing(const std::vector<std::pair<std::string, double>>& stages, double total_ms) {
  std::string out;
  char buf[64];
  double claimed = 0;
  auto add = [&](const std::string& name, double ms) {
    std::snprintf(buf, sizeof buf, ";dur=%.3f", ms);
    if (!out.empty()) out += ", ";
    out += name;
    out += buf;
  };
  for (const auto& [name, ms] : stages) {
    add(name, ms);
    claimed += ms;
  }
  if (total_ms - claimed >= 0.001) add("other", total_ms - claimed);
  add("total", total_ms);
  return out;
}

}  // namespace qgpu::timing
