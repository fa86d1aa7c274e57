#pragma once
// Load flags shared by the commands that read a dataset: --scan-shape, --pixel-mask and --representation.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "io/hdf5/load.hpp"

namespace qgpu::cli {

struct LoadFlags {
  std::vector<std::size_t> scan_shape;  // ROWS COLS, empty = from the file
  std::string pixel_mask = "keep";
  std::string representation = "auto";  // auto | dense | encoded
  std::size_t rows() const { return scan_shape.empty() ? 0 : scan_shape[0]; }
  std::size_t cols() const { return scan_shape.empty() ? 0 : scan_shape[1]; }
  void apply_to(io::LoadOptions& o) const {
    o.scan_rows = rows();
    o.scan_cols = cols();
    o.pixel_mask = pixel_mask;
    o.representation = representation;
  }
};

inline void add_scan_shape_flag(CLI::App* cmd, LoadFlags& f) {
  cmd->add_option("--scan-shape", f.scan_shape,
                  "scan ROWS COLS (default: dataset dims, scan_shape attribute, master ntrigger x nimages, square)")
      ->expected(2);
}

inline void add_load_flags(CLI::App* cmd, LoadFlags& f) {
  add_scan_shape_flag(cmd, f);
  cmd->add_option("--pixel-mask", f.pixel_mask,
                  "keep | zero: zero the detector's bad pixels (master pixel_mask > 0) before cropping/binning")
      ->check(CLI::IsMember({"keep", "zero"}));
  cmd->add_option("--representation", f.representation,
                  "auto | dense | encoded: resident form (auto = dense when it fits under 80% of free memory, else "
                  "the compact exact encoded form)")
      ->check(CLI::IsMember({"auto", "dense", "encoded"}));
}

}  // namespace qgpu::cli
