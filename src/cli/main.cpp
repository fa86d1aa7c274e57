// qgpu: command-line front end of quantem-gpu.
#include <CLI/CLI.hpp>
#include <hdf5.h>

#include <cstdio>
#include <exception>
#include <new>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "mpi/split_run.hpp"

namespace {

// Every failure reaches the user as one line on stderr (after any progress bar) and exit status 1.
int fail(const char* kind, const char* what) {
  qgpu::cli::end_progress_line();
  std::fprintf(stderr, "qgpu: error: %s%s\n", kind, what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // No HDF5 library close at exit: every file qgpu opens is closed by then (RAII; test_io HostileFiles25 checks
  // that no HDF5 object stays open after any error). But after a failed read of damaged metadata (a damaged group
  // header HDF5 reports, say, while the calibration is read), HDF5 1.10 keeps internal state that its at-exit
  // close loops on, printing its "infinite loop closing library" dump over the end of the output (issue 25).
  H5dont_atexit();
  CLI::App app{"quantem-gpu: load 4D-STEM HDF5 data onto the GPU and compute images from it"};
  app.set_version_flag("--version", std::string("qgpu ") + qgpu::kVersion);
  app.require_subcommand(1);
  try {
    qgpu::cli::add_cache(app);
    qgpu::cli::add_info(app);
    qgpu::cli::add_image(app);
    qgpu::cli::add_sample(app);
    qgpu::cli::add_serve(app);
    qgpu::cli::add_ssb(app);
    qgpu::cli::add_parallax(app);
    qgpu::cli::add_movie(app);
    for (int i = 1; i < argc; ++i)  // under mpirun: only the commands that split the scan
      if (argv[i][0] != '-') {
        qgpu::mpi::check_command_splits(argv[i]);
        break;
      }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    qgpu::cli::end_progress_line();
    return app.exit(e);
  } catch (const qgpu::Error& e) {
    return fail("", e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory: ", "the request needs more memory than this machine can give (use a region or bin)");
  } catch (const std::length_error& e) {
    return fail("out of memory: ", e.what());
  } catch (const std::exception& e) {
    return fail("", e.what());
  } catch (...) {
    return fail("", "unexpected failure (unknown exception)");
  }
  return 0;
}
