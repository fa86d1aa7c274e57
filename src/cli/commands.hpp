#pragma once
#include <CLI/CLI.hpp>

namespace qgpu::cli {

// Each adds its subcommand to the app and runs it when chosen.
void add_cache(CLI::App& app);
void add_info(CLI::App& app);
void add_image(CLI::App& app);
void add_sample(CLI::App& app);
void add_serve(CLI::App& app);
void add_ssb(CLI::App& app);
void add_parallax(CLI::App& app);
void add_movie(CLI::App& app);

}  // namespace qgpu::cli
