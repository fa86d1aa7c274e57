// qgpu sample OUT: the built-in simulated dataset, in one of the formats below (--format).
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "io/dm/write_dm.hpp"
#include "io/mrc/write_mrc.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::cli {

void add_sample(CLI::App& app) {
  auto* cmd = app.add_subcommand("sample", "Write a simulated 4D-STEM dataset (EIGER-style HDF5, bitshuffle+LZ4; "
                                           "or another format: --format)");
  struct Args {
    std::string out, dtype = "uint16", format = "h5", byte_order = "little";
    std::vector<std::size_t> scan{64, 64}, det{96, 96};
    sample::SampleSpec spec;
    sample::FramesLayout frames;
    std::size_t files = 0;
    sample::MibSampleOptions mib;
    std::size_t nans = 0;
    bool dm_transposed = false;
    std::vector<double> astig{0, 0};
    bool no_hint = false;
  };
  auto a = std::make_shared<Args>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("out", a->out, "output file (h5: the HDF5 file or master; mib: the .mib, .hdr beside it; empad: the .xml, .raw beside it)")->required();
  cmd->add_option("--format", a->format, "h5 (EIGER-style HDF5) | mib (Merlin .mib + .hdr) | npy (NumPy, 3D frames; "
                                         "--four-d: 4D) | raw (headerless frames) | mrc (MRC, NZ frames) | empad (OUT.xml + "
                                         "OUT.raw, float32 128x128 frames + 2 footer rows) | dm3 | dm4 | emd (py4DSTEM EMD "
                                         "1.0) | stempy (electron events, HDF5) | csr (LiberTEM raw CSR: OUT.toml + 3 .raw)");
  cmd->add_option("--scan", a->scan, "scan rows cols")->expected(2);
  auto* det = cmd->add_option("--detector", a->det, "detector rows cols (mib: default 256 256, quad 512 512, 514 514 "
                                                    "with --gap)")->expected(2);
  auto* dtype = cmd->add_option("--dtype", a->dtype, "uint8 | uint16 | uint32 (h5, npy, raw; mib: from --counter-depth); mrc: uint16 | int16 | int8 | float32; dm3/dm4: also int32, float64");
  auto* order = cmd->add_option("--byte-order", a->byte_order, "h5, npy, raw, mrc, dm3, dm4: little | big, the counts' byte order in the file")
      ->check(CLI::IsMember({"little", "big"}));
  auto* four_d = cmd->add_flag("--four-d", a->spec.four_d, "h5, npy: store (scan_r, scan_c, det_r, det_c) instead of (frames, ...)");
  auto* npy_version = cmd->add_option("--npy-version", a->frames.npy_version, "npy: format version 1 or 2")->check(CLI::Range(1, 2));
  auto* offset = cmd->add_option("--offset", a->frames.offset, "raw: bytes before the first frame");
  auto* header = cmd->add_option("--frame-header", a->frames.frame_header, "raw: bytes before each frame");
  auto* footer = cmd->add_option("--frame-footer", a->frames.frame_footer, "raw: bytes after each frame");
  cmd->add_option("--energy", a->spec.energy_kev, "beam energy (keV)");
  cmd->add_option("--semiangle", a->spec.semiangle_mrad, "convergence semi-angle (mrad)");
  cmd->add_option("--defocus", a->spec.defocus_angstrom, "C1 (angstrom; Krivanek sign: positive = overfocus, C1 = -defocus of py4DSTEM/abTEM; docs/conventions.md)");
  auto* astig = cmd->add_option("--astigmatism", a->astig, "A1 ANGLE_DEG: two-fold astigmatism (angstrom) and its angle "
                                                     "(degrees, ssb convention; py4DSTEM phi12 = 90 - ANGLE)")->expected(2);
  cmd->add_option("--rotation", a->spec.rotation_deg, "scan-detector rotation (degrees, as qgpu image --rotation takes it)");
  cmd->add_flag("--transpose", a->spec.transpose, "transposed detector (applied before --rotation, as qgpu image takes it)");
  cmd->add_flag("--no-defocus-hint", a->no_hint, "write no calibration/defocus_angstrom (no nominal sign; /entry/truth keeps C1)");
  cmd->add_option("--dose", a->spec.dose_per_frame, "mean counts per frame (0: dtype default)");
  cmd->add_option("--seed", a->spec.seed, "random seed");
  cmd->add_option("--files", a->files,
                  "h5: an EIGER/ARINA-style master OUT linking N data files <stem>_data_000001.h5, ...; mib: N files "
                  "<stem>_000001.mib, ... and <stem>.hdr (0: one file)")
      ->check(CLI::NonNegativeNumber);
  auto* depth = cmd->add_option("--counter-depth", a->mib.counter_depth, "mib: counter depth 1 | 6 | 12 | 24");
  auto* quad = cmd->add_flag("--quad", a->mib.quad, "mib: 2x2 quad (4 chips) instead of one chip");
  auto* raw = cmd->add_flag("--raw", a->mib.raw, "mib: raw (R64) chip readout instead of binary");
  auto* nans = cmd->add_option("--nan", a->nans, "empad: this many NaN values in the float32 frames");
  auto* dm_transposed = cmd->add_flag("--dm-transposed", a->dm_transposed,
                                      "dm3, dm4: the old transposed layout (scan dims first, no Data Order Swapped)");
  auto* gap = cmd->add_flag("--gap", a->mib.gap, "mib: quad with the 2-pixel gap cross (2x2G layout, 514x514)");
  cmd->callback([=] { run_command([&] {
    a->spec.scan_rows = a->scan[0];
    a->spec.scan_cols = a->scan[1];
    a->spec.det_rows = a->det[0];
    a->spec.det_cols = a->det[1];
    a->spec.defocus_in_calibration = !a->no_hint;
    if (astig->count()) {
      a->spec.astigmatism_angstrom = a->astig[0];
      a->spec.astigmatism_angle_deg = a->astig[1];
    }
    if (a->format != "h5" && a->format != "mib" && a->format != "npy" && a->format != "raw" && a->format != "mrc" &&
        a->format != "empad" && a->format != "dm3" && a->format != "dm4" && a->format != "emd" &&
        a->format != "stempy" && a->format != "csr")
      throw InvalidArgument("--format must be h5, mib, npy, raw, mrc, empad, dm3, dm4, emd, stempy or csr, not '" +
                            a->format + "'");
    // Options of one format given for another are refused, not ignored.
    auto only_for = [&](std::initializer_list<CLI::Option*> opts, std::initializer_list<const char*> formats) {
      for (const char* f : formats)
        if (a->format == f) return;
      for (const CLI::Option* o : opts)
        if (o->count()) throw InvalidArgument(o->get_name() + " does not apply to --format " + a->format);
    };
    only_for({depth, quad, raw, gap}, {"mib"});
    only_for({dtype, order}, {"h5", "npy", "raw", "mrc", "dm3", "dm4", "emd", "stempy", "csr"});
    only_for({dm_transposed}, {"dm3", "dm4"});
    only_for({four_d}, {"h5", "npy"});
    only_for({npy_version}, {"npy"});
    only_for({offset, header, footer}, {"raw"});
    only_for({nans}, {"empad"});
    if (a->format != "mib") {
      a->spec.dtype = dtype_from_name(a->dtype);
      a->spec.big_endian = a->byte_order == "big";
    }
    if (a->format == "h5") {
      if (a->files > 0) {
        const auto data = sample::write_sample_acquisition(a->out, a->spec, a->files, progress_bar("simulating"));
        std::printf("wrote %s (master) linking %zu data files\n", a->out.c_str(), data.size());
        return;
      }
      sample::write_sample(a->out, a->spec, progress_bar("simulating"));
      std::printf("wrote %s\n", a->out.c_str());
    } else if (a->format == "empad") {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 or Merlin acquisitions (--format h5 or mib)");
      if (!det->count()) a->spec.det_rows = a->spec.det_cols = 128;
      for (const auto& f : sample::write_sample_empad(a->out, a->spec, a->nans, progress_bar("simulating")))
        std::printf("wrote %s\n", f.c_str());
    } else if (a->format == "mib") {
      if (!det->count()) {
        const std::size_t side = a->mib.quad ? (a->mib.gap ? 514 : 512) : 256;
        a->spec.det_rows = a->spec.det_cols = side;
      }
      const auto written = sample::write_sample_mib(a->out, a->spec, a->mib, a->files, progress_bar("simulating"));
      for (const auto& f : written) std::printf("wrote %s\n", f.c_str());
    } else if (a->format == "dm3" || a->format == "dm4") {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 or Merlin acquisitions (--format h5 or mib)");
      sample::DmSampleOptions dm;
      dm.version = a->format == "dm3" ? 3 : 4;
      dm.transposed = a->dm_transposed;
      sample::write_sample_dm(a->out, a->spec, dm, progress_bar("simulating"));
      std::printf("wrote %s\n", a->out.c_str());
    } else if (a->format == "emd" || a->format == "stempy" || a->format == "csr") {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 or Merlin acquisitions (--format h5 or mib)");
      if (a->spec.big_endian) throw InvalidArgument("--byte-order big does not apply to --format " + a->format);
      if (a->format == "emd") {
        sample::write_sample_emd(a->out, a->spec, progress_bar("simulating"));
        std::printf("wrote %s\n", a->out.c_str());
      } else if (a->format == "stempy") {
        sample::write_sample_stempy(a->out, a->spec, progress_bar("simulating"));
        std::printf("wrote %s\n", a->out.c_str());
      } else {
        for (const auto& f : sample::write_sample_csr(a->out, a->spec, progress_bar("simulating")))
          std::printf("wrote %s\n", f.c_str());
      }
    } else if (a->format == "mrc") {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 or Merlin acquisitions (--format h5 or mib)");
      sample::write_sample_mrc(a->out, a->spec, 0, progress_bar("simulating"));
      std::printf("wrote %s\n", a->out.c_str());
    } else {
      if (a->files > 0) throw InvalidArgument("--files writes HDF5 or Merlin acquisitions (--format h5 or mib)");
      a->frames.npy = a->format == "npy";
      sample::write_sample_frames(a->out, a->spec, a->frames, progress_bar("simulating"));
      std::printf("wrote %s\n", a->out.c_str());
    }
  }); });
}

}  // namespace qgpu::cli
