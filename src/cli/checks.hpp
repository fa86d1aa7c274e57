#pragma once
// Checks of command-line values made before any data is read: a bad option fails at once, with its name.
#include <cmath>
#include <filesystem>
#include <string>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "device/device.hpp"
#include "display/options.hpp"

namespace qgpu::cli {

inline void check_backend_name(const std::string& b) {
  if (b != "cuda" && b != "cpu" && b != "vulkan" && b != "auto")
    throw InvalidArgument("--backend: unknown backend '" + b + "' (expected cuda, cpu, vulkan or auto)");
}

inline void check_positive(const char* option, double v) {
  if (!std::isfinite(v) || v <= 0) throw InvalidArgument(std::string(option) + " must be a finite number > 0");
}

inline void check_finite(const char* option, double v) {
  if (!std::isfinite(v)) throw InvalidArgument(std::string(option) + " must be a finite number");
}

// A number typed for `option`, all of it (no trailing text), finite.
inline double number(const char* option, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v))
    throw InvalidArgument(std::string(option) + ": '" + text + "' is not a finite number");
  return v;
}

// Display options, with the option names a user typed.
inline display::DisplayOptions display_options(const std::string& colormap, const std::string& scale,
                                               double lower, double upper) {
  display::DisplayOptions o;
  o.colormap = colormap;
  try {
    o.scale = display::scale_from_name(scale);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--scale: ") + e.what());
  }
  o.lower_percentile = lower;
  o.upper_percentile = upper;
  try {
    display::validate(o);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--colormap/--percentiles: ") + e.what());
  }
  return o;
}

// Creates the output folder (and its parents) now, so that an unusable -o fails before the data is loaded.
inline std::filesystem::path output_folder(const std::string& out) {
  const std::filesystem::path dir(out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec))
    throw IoError("-o/--out: cannot create the output folder '" + out + "'" +
                  (ec ? ": " + ec.message() : ": a file of that name exists"));
  return dir;
}

// A command's outputs in its folder, all or nothing: made before the folder is created (output_folder), it
// removes on failure (destroyed without keep()) every entry this run added to the folder, and the folder itself when
// this run created it and nothing else is left in it.
class OutputGuard {
 public:
  explicit OutputGuard(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    existed_ = std::filesystem::exists(dir_, ec);
    if (existed_ && std::filesystem::is_directory(dir_, ec))
      for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) before_.insert(e.path().filename());
  }
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;
  void keep() { keep_ = true; }
  ~OutputGuard() {
    if (keep_) return;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) return;
    std::vector<std::filesystem::path> added;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
      if (!before_.count(e.path().filename())) added.push_back(e.path());
    for (const auto& p : added) std::filesystem::remove_all(p, ec);
    if (!existed_ && std::filesystem::is_empty(dir_, ec)) std::filesystem::remove(dir_, ec);
  }

 private:
  std::filesystem::path dir_;
  bool existed_ = false, keep_ = false;
  std::set<std::filesystem::path> before_;
};

// Runs `body`, whose outputs go to `dir`: all of them kept, or none when it throws (OutputGuard).
template <class F> void writing_all_or_none(const std::filesystem::path& dir, F&& body) {
  OutputGuard outputs(dir);
  body();
  outputs.keep();
}

}  // namespace qgpu::cli
