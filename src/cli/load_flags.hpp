#pragma once
// The one set of load flags, shared by every command that reads a dataset (image, ssb, parallax, movie, cache, serve,
// info --timing): the file's format, scan shape, pixel mask, regions, binning, representation and how to read and
// decode. A command declares them with add_source_flags / add_input_flags and turns them into io::LoadOptions whole.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "cli/progress.hpp"
#include "core/error.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::cli {

struct LoadFlags {
  std::vector<std::size_t> scan_shape;  // ROWS COLS, empty = from the file
  std::string pixel_mask = "keep";
  std::string pixel_mask_file;          // a mask given by the user (io::LoadOptions::pixel_mask_file)
  std::string decoder = "auto";
  unsigned read_threads = 0;
  bool direct_io = false;
  std::string representation = "auto";  // auto | dense | encoded
  std::string radial_basis = "auto";    // auto | on | off (io::LoadOptions::radial_basis)
  std::vector<double> radial_basis_center;  // ROW COL, empty = the first batch's disk fit
  std::string scan_binned = "auto";     // auto | off | b (io::LoadOptions::scan_binned)
  std::string format = "auto";          // auto (by content) | hdf5 | npy | raw | ...
  io::RawLayout raw;                    // --format raw: --dtype, --detector-shape, --offset, --frame-header/-footer
  std::vector<std::size_t> detector_shape;
  bool flip_rows = false, single_file = false;  // Merlin
  std::vector<std::size_t> scan_region, detector_region;  // ROW0 COL0 ROWS COLS, empty = all
  std::size_t bin_scan = 1, bin_detector = 1;
  std::size_t rows() const { return scan_shape.empty() ? 0 : scan_shape[0]; }
  std::size_t cols() const { return scan_shape.empty() ? 0 : scan_shape[1]; }
  void apply_to(io::LoadOptions& o) const {
    o.scan_rows = rows();
    o.scan_cols = cols();
    o.pixel_mask = pixel_mask;
    o.pixel_mask_file = pixel_mask_file;
    o.decoder = decoder;
    o.read_threads = read_threads;
    o.direct_io = direct_io;
    o.representation = representation;
    o.radial_basis = radial_basis;
    if (!radial_basis_center.empty()) o.radial_basis_center = {{radial_basis_center[0], radial_basis_center[1]}};
    o.scan_binned = scan_binned;
    o.format = format;
    o.raw = raw_layout();
    o.flip_rows = flip_rows;
    o.single_file = single_file;
    o.scan_region = region(scan_region);
    o.detector_region = region(detector_region);
    o.bin_scan = bin_scan;
    o.bin_detector = bin_detector;
  }
  static Region region(const std::vector<std::size_t>& v) {
    return v.empty() ? Region{} : Region{v[0], v[1], v[2], v[3]};
  }
  // The values the parser cannot check alone, checked before any file is opened.
  void check() const {
    if (bin_scan == 0 || bin_detector == 0) throw InvalidArgument("--bin-scan/--bin-detector must be >= 1");
  }
  // A flag that changes which counts are loaded (what a product cache, made from one whole load, cannot answer).
  bool selects_data() const {
    return !scan_region.empty() || !detector_region.empty() || bin_scan != 1 || bin_detector != 1 ||
           !scan_shape.empty() || pixel_mask != "keep" || !pixel_mask_file.empty();
  }
  io::RawLayout raw_layout() const {
    io::RawLayout r = raw;
    if (detector_shape.size() == 2) r.det_rows = detector_shape[0], r.det_cols = detector_shape[1];
    return r;
  }
  io::SourceOptions source_options(const std::string& dataset) const {
    io::SourceOptions s;
    s.format = format;
    s.dataset_path = dataset;
    s.scan_rows = rows();
    s.scan_cols = cols();
    s.raw = raw_layout();
    s.flip_rows = flip_rows;
    s.single_file = single_file;
    return s;
  }
};

// The load options of a command (its --backend, --dataset and these flags), with a progress bar under
// `progress_label` unless it is empty: one home for every command that loads a dataset.
inline io::LoadOptions load_options(const std::string& backend, const std::string& dataset, const LoadFlags& f,
                                    const std::string& progress_label = "loading") {
  f.check();
  io::LoadOptions o;
  o.backend = backend;
  o.dataset_path = dataset;
  f.apply_to(o);
  if (!progress_label.empty()) o.progress = progress_bar(progress_label);
  return o;
}

inline void add_scan_shape_flag(CLI::App* cmd, LoadFlags& f) {
  cmd->add_option("--scan-shape", f.scan_shape,
                  "scan ROWS COLS (default: dataset dims, scan_shape attribute, master ntrigger x nimages, square)")
      ->expected(2);
}

// Which reader reads the file (by content unless --format names one) and the layout of headerless raw frames.
inline void add_format_flags(CLI::App* cmd, LoadFlags& f) {
  std::string names = "auto";
  for (const auto& r : io::formats()) names += " | " + r.name;
  cmd->add_option("--format", f.format, names + " (auto: recognised by the file's content; raw: headerless frames)");
  cmd->add_option("--dtype", f.raw.dtype, "--format raw: uint8 | uint16 | uint32, optionally with a byte order "
                                          "(uint16be, >u2, <u4)");
  cmd->add_option("--detector-shape", f.detector_shape, "--format raw: detector ROWS COLS")->expected(2);
  cmd->add_option("--offset", f.raw.offset, "--format raw: bytes before the first frame");
  cmd->add_option("--frame-header", f.raw.frame_header, "--format raw: bytes before each frame");
  cmd->add_option("--frame-footer", f.raw.frame_footer, "--format raw: bytes after each frame");
  cmd->add_flag("--flip-rows", f.flip_rows, "Merlin: flip the detector rows (rosettasciio's orientation; default: as "
                                            "stored, as LiberTEM)");
  cmd->add_flag("--single-file", f.single_file, "Merlin: read only the named .mib, not the other files of its "
                                                "acquisition");
}

// How the file is read and decoded (issue-free defaults: our decoder, one read thread per core, page cache).
inline void add_read_flags(CLI::App* cmd, LoadFlags& f) {
  cmd->add_option("--decoder", f.decoder,
                  "auto | quantem (our decoder: GPU on cuda, all cores on cpu) | hdf5 (HDF5 filter pipeline, cpu only)")
      ->check(CLI::IsMember({"auto", "quantem", "hdf5"}));
  cmd->add_option("--read-threads", f.read_threads, "threads of pread (0: one per core)");
  cmd->add_flag("--direct-io", f.direct_io, "O_DIRECT (unbuffered) reads, for cold files on fast disks");
}

inline void add_load_flags(CLI::App* cmd, LoadFlags& f);

// What every command that loads declares besides its file(s): --backend, --dataset and the load flags.
inline void add_source_flags(CLI::App* cmd, std::string& backend, std::string& dataset, LoadFlags& f) {
  cmd->add_option("--backend", backend,
                  "cuda | cpu | vulkan | auto (auto = cuda, never falls back to cpu or vulkan; QGPU_BACKEND=cpu|cuda|vulkan sets "
                  "auto's choice)")
      ->capture_default_str();
  cmd->add_option("--dataset", dataset, "dataset path (default: discover)");
  add_load_flags(cmd, f);
}

// What every command that loads one file declares: the file, --backend, --dataset and the load flags.
inline CLI::Option* add_input_flags(CLI::App* cmd, std::string& file, std::string& backend, std::string& dataset,
                                    LoadFlags& f) {
  CLI::Option* o =
      cmd->add_option("file", file, "4D-STEM file: HDF5 (or EIGER/ARINA master), Merlin .mib, NumPy .npy, raw frames "
                                    "(--format raw)")
          ->required();
  add_source_flags(cmd, backend, dataset, f);
  return o;
}

// The detector's bad pixels: the file's mask (--pixel-mask zero) or one given for any format (--pixel-mask-file).
inline void add_pixel_mask_flags(CLI::App* cmd, LoadFlags& f) {
  cmd->add_option("--pixel-mask", f.pixel_mask,
                  "keep | zero: zero the detector's bad pixels (master pixel_mask > 0) before cropping/binning")
      ->check(CLI::IsMember({"keep", "zero"}));
  cmd->add_option("--pixel-mask-file", f.pixel_mask_file,
                  "a pixel mask for any format, replacing the file's: .npy (det_rows x det_cols, integer or bool, "
                  "nonzero = bad) or text lines 'row col'; bad pixels zeroed before cropping/binning");
}

// Which part of the data is loaded, and exact integer binning at load.
inline void add_region_flags(CLI::App* cmd, LoadFlags& f) {
  cmd->add_option("--scan-region", f.scan_region, "ROW0 COL0 ROWS COLS (default: all)")->expected(4);
  cmd->add_option("--detector-region", f.detector_region, "ROW0 COL0 ROWS COLS (default: all)")->expected(4);
  cmd->add_option("--bin-scan", f.bin_scan, "exact integer scan binning")->capture_default_str();
  cmd->add_option("--bin-detector", f.bin_detector, "exact integer detector binning")->capture_default_str();
}

inline void add_load_flags(CLI::App* cmd, LoadFlags& f) {
  add_scan_shape_flag(cmd, f);
  add_region_flags(cmd, f);
  add_format_flags(cmd, f);
  add_pixel_mask_flags(cmd, f);
  add_read_flags(cmd, f);
  cmd->add_option("--representation", f.representation,
                  "auto | dense | encoded: resident form (auto = dense when it fits under 80% of free memory, else "
                  "the compact exact encoded form)")
      ->check(CLI::IsMember({"auto", "dense", "encoded"}));
  cmd->add_option("--radial-basis", f.radial_basis,
                  "auto | on | off: with an encoded load, also build prefix images over detector shells around the "
                  "BF disk centre that answer centred BF/ADF/annular sums and CoM exactly without decoding (auto = "
                  "on from 1024x1024 scan positions when it fits; see docs/design.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--radial-basis-center", f.radial_basis_center,
                  "ROW COL: the radial basis' centre (default: the disk fit of the first loaded batch)")
      ->expected(2);
  cmd->add_option("--scan-binned", f.scan_binned,
                  "auto | off | B: with an encoded load, also keep the exact sums of B x B scan positions (an encoded "
                  "copy B^2 smaller in frames) that answer any detector at a scan bin B divides, e.g. the viewer's "
                  "display bin (auto = that bin when a scan side passes 1024 positions and it fits; see "
                  "docs/design.md)");
}

}  // namespace qgpu::cli
