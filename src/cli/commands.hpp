#pragma once
#include <CLI/CLI.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "resident/dataset.hpp"

namespace qgpu::cli {

// Each adds its subcommand to the app and runs it when chosen.
void add_cache(CLI::App& app);
void add_convert(CLI::App& app);
void add_info(CLI::App& app);
void add_image(CLI::App& app);
void add_sample(CLI::App& app);
void add_serve(CLI::App& app);
void add_ssb(CLI::App& app);
void add_parallax(CLI::App& app);
void add_movie(CLI::App& app);
void add_live(CLI::App& app);
void add_simulate_detector(CLI::App& app);

// What `qgpu image` writes by default (BF, ADF, DPC, iDPC: PNG + .npy + provenance .json) for a dataset, into dir.
// center / radius: the BF disk (--center / --radius of qgpu image), replacing the fitted one's.
void write_scan_images(const Dataset& ds, const std::string& dir, const std::vector<double>& center = {},
                       std::optional<double> radius = {});

// An angle as the commands print it: degrees in (-180, 180] (359.85 prints as -0.15).
inline double printed_angle(double deg) {
  double a = std::fmod(deg, 360.0);
  if (a <= -180.0) a += 360.0;
  if (a > 180.0) a -= 360.0;
  return a;
}

}  // namespace qgpu::cli
