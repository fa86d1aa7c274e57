// qgpu: command-line front end of quantem-gpu.
#include <CLI/CLI.hpp>
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "device/backend_request.hpp"
#include "device/device.hpp"
#include "mpi/split_run.hpp"

namespace {

// Every failure reaches the user as one line on stderr (after any progress bar) and exit status 1.
int fail(const char* kind, const char* what, int status = 1) {
  qgpu::cli::end_progress_line();
  std::fprintf(stderr, "qgpu: error: %s%s\n", kind, what);
  return status;
}

// Levenshtein distance, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The first word that is not an option, when it names no command: the error, with the nearest command.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  std::string word;
  for (int i = 1; i < argc && word.empty(); ++i)
    if (argv[i][0] != '-') word = argv[i];
  if (word.empty()) return "";
  std::string names, nearest;
  std::size_t best = std::string::npos;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
    const std::size_t d = distance(word, sub->get_name());
    if (d < best) best = d, nearest = sub->get_name();
  }
  std::string msg = "unknown command '" + word + "'";
  if (best <= std::max<std::size_t>(2, nearest.size() / 3)) msg += " (did you mean '" + nearest + "'?)";
  return msg + "; the commands are " + names + " (qgpu --help)";
}

// A command line the parser refuses: one `qgpu: error:` line, exit status 2 for usage (an unknown command or
// option, a missing or extra argument) and 1 for a bad value (the README's rule).
int parse_failure(const CLI::App& app, const CLI::ParseError& e) {
  const int code = e.get_exit_code();
  if (code == int(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
  const bool bad_value =
      code == int(CLI::ExitCodes::ConversionError) || code == int(CLI::ExitCodes::ValidationError);
  std::string what = e.what();
  if (!bad_value) what += " (see --help)";
  return fail("", what.c_str(), bad_value ? 1 : 2);
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
  qgpu::set_cpu_backend_hint("--backend cpu");  // BackendUnavailable in this interface's spelling
  try {
    qgpu::cli::add_cache(app);
    qgpu::cli::add_convert(app);
    qgpu::cli::add_info(app);
    qgpu::cli::add_image(app);
    qgpu::cli::add_sample(app);
    qgpu::cli::add_serve(app);
    qgpu::cli::add_ssb(app);
    qgpu::cli::add_parallax(app);
    qgpu::cli::add_movie(app);
    qgpu::cli::add_live(app);
    qgpu::cli::add_simulate_detector(app);
  } catch (const std::exception& e) {
    return fail("", e.what());
  }
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty())
    return fail("", unknown.c_str(), 2);
  try {
    for (int i = 1; i < argc; ++i)  // under mpirun: only the commands that split the scan
      if (argv[i][0] != '-') {
        qgpu::mpi::check_command_splits(argv[i]);
        break;
      }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    qgpu::cli::end_progress_line();
    return parse_failure(app, e);
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
