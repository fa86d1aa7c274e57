#pragma once
// Load flags shared by the commands that read a dataset: --scan-shape, --pixel-mask, --representation and how to
// read and decode.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "cli/progress.hpp"
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
  std::string format = "auto";          // auto (by content) | hdf5 | npy | raw | ...
  io::RawLayout raw;                    // --format raw: --dtype, --detector-shape, --offset, --frame-header/-footer
  std::vector<std::size_t> detector_shape;
  bool flip_rows = false, single_file = false;  // Merlin
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
    o.format = format;
    o.raw = raw_layout();
    o.flip_rows = flip_rows;
    o.single_file = single_file;
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

// What every command that loads one file declares: the file, --backend, --dataset and the load flags.
inline void add_input_flags(CLI::App* cmd, std::string& file, std::string& backend, std::string& dataset,
                            LoadFlags& f) {
  cmd->add_option("file", file, "4D-STEM file: HDF5 (or EIGER/ARINA master), NumPy .npy, raw frames (--format raw)")
      ->required();
  cmd->add_option("--backend", backend, "cuda | cpu | auto (auto = cuda, never falls back to cpu)");
  cmd->add_option("--dataset", dataset, "dataset path (default: discover)");
  add_load_flags(cmd, f);
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

inline void add_load_flags(CLI::App* cmd, LoadFlags& f) {
  add_scan_shape_flag(cmd, f);
  add_format_flags(cmd, f);
  add_pixel_mask_flags(cmd, f);
  add_read_flags(cmd, f);
  cmd->add_option("--representation", f.representation,
                  "auto | dense | encoded: resident form (auto = dense when it fits under 80% of free memory, else "
                  "the compact exact encoded form)")
      ->check(CLI::IsMember({"auto", "dense", "encoded"}));
}

}  // namespace qgpu::cli
