// qgpu sample OUT.h5: the built-in simulated dataset.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::cli {

void add_sample(CLI::App& app) {
  auto* cmd = app.add_subcommand("sample", "Write a simulated 4D-STEM dataset (EIGER-style HDF5, bitshuffle+LZ4; or "
                                            "NumPy .npy, raw frames)");
  struct Args {
    std::string out, dtype = "uint16", format = "h5", byte_order = "little";
    std::vector<std::size_t> scan{64, 64}, det{96, 96};
    sample::SampleSpec spec;
    sample::FramesLayout frames;
    std::size_t files = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("out", a->out, "output file")->required();
  cmd->add_option("--format", a->format, "h5 (EIGER-style HDF5) | npy (NumPy, 3D frames; --four-d: 4D) | raw "
                                         "(headerless frames)")
      ->check(CLI::IsMember({"h5", "npy", "raw"}));
  cmd->add_flag("--four-d", a->spec.four_d, "h5, npy: store (scan_r, scan_c, det_r, det_c) instead of (frames, ...)");
  cmd->add_option("--npy-version", a->frames.npy_version, "npy: format version 1 or 2")->check(CLI::Range(1, 2));
  cmd->add_option("--offset", a->frames.offset, "raw: bytes before the first frame");
  cmd->add_option("--frame-header", a->frames.frame_header, "raw: bytes before each frame");
  cmd->add_option("--frame-footer", a->frames.frame_footer, "raw: bytes after each frame");
  cmd->add_option("--scan", a->scan, "scan rows cols")->expected(2);
  cmd->add_option("--detector", a->det, "detector rows cols")->expected(2);
  cmd->add_option("--dtype", a->dtype, "uint8 | uint16 | uint32");
  cmd->add_option("--byte-order", a->byte_order, "little | big: the counts' byte order in the file")
      ->check(CLI::IsMember({"little", "big"}));
  cmd->add_option("--energy", a->spec.energy_kev, "beam energy (keV)");
  cmd->add_option("--semiangle", a->spec.semiangle_mrad, "convergence semi-angle (mrad)");
  cmd->add_option("--defocus", a->spec.defocus_angstrom, "C1 (angstrom; Krivanek sign: positive = overfocus, C1 = -defocus of py4DSTEM/abTEM; docs/conventions.md)");
  cmd->add_option("--dose", a->spec.dose_per_frame, "mean counts per frame (0: dtype default)");
  cmd->add_option("--seed", a->spec.seed, "random seed");
  cmd->add_option("--files", a->files,
                  "write an EIGER/ARINA-style master OUT linking N data files <stem>_data_000001.h5, ... (0: one file)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([a] { run_command([&] {
    a->spec.scan_rows = a->scan[0];
    a->spec.scan_cols = a->scan[1];
    a->spec.det_rows = a->det[0];
    a->spec.det_cols = a->det[1];
    a->spec.dtype = dtype_from_name(a->dtype);
    a->spec.big_endian = a->byte_order == "big";
    if (a->format != "h5") {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 acquisitions (--format h5)");
      a->frames.npy = a->format == "npy";
      sample::write_sample_frames(a->out, a->spec, a->frames, progress_bar("simulating"));
      std::printf("wrote %s\n", a->out.c_str());
      return;
    }
    if (a->files > 0) {
      const auto data = sample::write_sample_acquisition(a->out, a->spec, a->files, progress_bar("simulating"));
      std::printf("wrote %s (master) linking %zu data files\n", a->out.c_str(), data.size());
      return;
    }
    sample::write_sample(a->out, a->spec, progress_bar("simulating"));
    std::printf("wrote %s\n", a->out.c_str());
  }); });
}

}  // namespace qgpu::cli
