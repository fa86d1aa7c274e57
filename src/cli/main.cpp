// qgpu: command-line front end of quantem-gpu.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"quantem-gpu: load 4D-STEM HDF5 data onto the GPU and compute images from it"};
  app.set_version_flag("--version", std::string("qgpu ") + qgpu::kVersion);
  app.require_subcommand(1);
  qgpu::cli::add_info(app);
  qgpu::cli::add_image(app);
  qgpu::cli::add_sample(app);
  qgpu::cli::add_serve(app);
  qgpu::cli::add_ssb(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const qgpu::Error& e) {
    std::fprintf(stderr, "qgpu: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
