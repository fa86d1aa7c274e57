#pragma once
// The intensity scales of the display pipeline (the arithmetic itself is in scaling.hpp).
#include <string>

#include "core/error.hpp"

namespace qgpu::display {

// linear: v;  log: log(1 + max(v, 0));  signed_log: sign(v) * log(1 + |v|).
enum class Scale { linear, log, signed_log };

inline std::string scale_name(Scale s) {
  switch (s) {
    case Scale::linear: return "linear";
    case Scale::log: return "log";
    case Scale::signed_log: return "signed_log";
  }
  return "unknown";
}

inline Scale scale_from_name(const std::string& name) {
  if (name == "linear") return Scale::linear;
  if (name == "log") return Scale::log;
  if (name == "signed_log") return Scale::signed_log;
  throw InvalidArgument("unknown scale '" + name + "' (expected 'linear', 'log' or 'signed_log')");
}

}  // namespace qgpu::display
