#pragma once
// Public load API: a 4D-STEM file of any format the source layer reads (io/source/readers.hpp) -> resident Dataset
// (GPU for cuda, host memory for cpu), through the one pipeline: records located, coalesced parallel reads, batches
// decoded (GPU kernels on cuda, all cores on cpu), cropped/binned/masked, dense or encoded.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/hdf5/file_info.hpp"
#include "io/source/given_pixel_mask.hpp"
#include "io/source/readers.hpp"
#include "resident/basis/radial_basis.hpp"
#include "resident/binned/scan_binned.hpp"
#include "resident/dataset.hpp"

namespace qgpu::io {

struct LoadOptions {
  std::string backend = "auto";  // "cuda" | "cpu" | "auto"
  std::string format = "auto";   // "auto" (recognised by content) | a reader's name (io::formats())
  std::string dataset_path;      // HDF5: "" discovers
  RawLayout raw;                 // format "raw": dtype, detector shape, offsets
  bool flip_rows = false;        // Merlin: rows flipped (rosettasciio's orientation; docs/conventions.md)
  bool single_file = false;      // Merlin: only the named .mib, not the other files of its acquisition
  std::size_t scan_rows = 0, scan_cols = 0;  // override the stored scan shape
  Region scan_region;            // default: whole scan
  Region detector_region;        // default: whole detector
  std::size_t bin_scan = 1;      // exact integer sums over bin_scan x bin_scan probe positions
  std::size_t bin_detector = 1;  // exact integer sums over bin_detector x bin_detector pixels
  std::size_t batch_bytes = 0;   // compressed bytes read per batch (0 = 64 MiB); a tuning knob
  std::size_t staging_bytes = 0;  // decoded frames staged per batch for crop/binning/encoding (0 = 2 GiB cuda,
                                  // 512 MiB cpu; at least one output row of input frames); a tuning knob
  unsigned read_threads = 0;     // threads of pread (0 = one per hardware thread)
  bool direct_io = false;        // O_DIRECT (unbuffered) reads, for cold files on disk
  std::string decoder = "auto";  // "auto" | "quantem" (our decoder: GPU on cuda, all cores on cpu) | "hdf5"
                                 // (HDF5 filter pipeline, cpu only: the reference); auto = quantem where it applies
  // "keep" (default) | "zero": set the detector's bad pixels (master pixel_mask > 0) to 0 in every frame, on the
  // full stored frame before detector cropping and binning. "zero" without a pixel mask in the file: IoError.
  std::string pixel_mask = "keep";
  // A mask given by the user (io/source/given_pixel_mask.hpp), for any reader: a file (.npy of any integer or bool
  // dtype, or "row col" lines) or an array (Python). Nonzero = bad pixel, of the full stored frame. When given it is
  // applied whatever pixel_mask says and replaces the file's mask; the provenance names it.
  std::string pixel_mask_file;
  GivenPixelMask pixel_mask_given;
  // "auto" | "dense" | "encoded" (the compact exact encoded-v1 form, built batch by batch: the dense cube is never
  // held whole). auto = dense when the dense output plus load scratch fits under the admission limit, else encoded.
  // Whatever is asked, a load that fits neither way (or not the way asked) raises InvalidArgument before any work.
  std::string representation = "auto";
  double admission_fraction = 0.8;      // of the free GPU memory (cuda) or available host memory (cpu)
  std::size_t admission_limit_bytes = 0;  // > 0: use this limit instead of fraction x free memory
  std::function<void(double)> progress;  // fraction done in [0, 1], called from the loading thread
  // "auto" | "on" | "off": a radial basis (resident/basis/radial_basis.hpp) built during an encoded load, answering
  // centred disks / annuli and their CoM from prefix images. auto = on for encoded loads of at least
  // kAutoRadialBasisFrames scan positions when the basis (sized for a centre in a detector corner) fits under the
  // admission limit beside the encoded estimate; on = always (InvalidArgument for a dense load; an error when it
  // cannot be built).
  std::string radial_basis = "auto";
  std::optional<std::pair<double, double>> radial_basis_center;  // (row, col) of the output detector; default: fit
  // "auto" | "off" | "<b>": a scan-binned copy (resident/binned/scan_binned.hpp) built during an encoded load, the
  // exact sums of b x b scan positions, answering any mask at a scan bin that b divides. auto = on at the viewer's
  // display bin (display_scan_bin: a scan side above 1024) when its estimate fits under the admission limit beside
  // the encoded estimate; a number = always at that bin (InvalidArgument for a dense load or a bin not dividing the
  // output scan; an error when it cannot be built).
  std::string scan_binned = "auto";
};

inline constexpr std::size_t kAutoRadialBasisFrames = std::size_t(1024) * 1024;

// Loads a file. Binned data holds uint32 sums of counts, int32 sums of signed integers, float32 sums of floats (an
// integer overflow raises FormatError); unbinned data keeps its dtype (float64 files load as float32).
Dataset load(const std::string& path, const LoadOptions& options = {});

// The validated geometry of a load: regions resolved, bins checked, output shape and dtype.
struct LoadPlan {
  FileInfo info;
  Region scan;
  Region detector;
  std::size_t bin_scan = 1, bin_detector = 1;
  Shape4D out_shape;
  std::size_t batch_bytes = std::size_t(64) << 20;
  std::size_t staging_bytes = 0;  // as given (0 = the backend's default: staging_budget())
  unsigned read_threads = 0;
  bool direct_io = false;
  std::string decoder = "quantem";  // resolved: "quantem" or "hdf5"
  DType out_dtype = DType::u16;
  std::string pixel_mask = "keep";  // as asked; "given" for a mask given by the user
  std::string pixel_mask_source;    // the mask applied: the user's file or "python array", or the HDF5 master's
  bool zero_bad_pixels = false;     // bad pixels to zero (bad_pixels not empty): in every full frame first
  std::vector<std::uint32_t> bad_pixels;  // the mask applied: flat indices (row * det_cols + col), ascending
  std::string representation = "dense";  // resolved: "dense" | "encoded"
  nlohmann::json admission = nlohmann::json::object();  // the admission decision (estimates, limit), for provenance
  RadialBasisRequest radial_basis;  // resolved from LoadOptions::radial_basis (encoded loads only)
  ScanBinnedRequest scan_binned;    // resolved from LoadOptions::scan_binned (encoded loads only)
  bool binned() const { return bin_scan > 1 || bin_detector > 1; }
  bool full_frames() const {
    return detector.rows == info.shape.det_rows && detector.cols == info.shape.det_cols && bin_detector == 1;
  }
};

LoadPlan plan_load(const std::string& path, const LoadOptions& options);

// FormatError naming the dataset, its precision and bit offset when its elements are not plain counts (every bit
// the count: FileInfo::plain_bits): our decoders (`decoder`, in words) read the stored bits as they are.
void require_plain_bits(const FileInfo& fi, const std::string& decoder);

// Decoded frames a load stages per batch (crop/binning/encoding): the plan's staging_bytes or the backend's default,
// in whole frames, at least one output row of input frames. Shared by the loaders and the admission estimate.
std::size_t staging_frames(const LoadPlan& plan, bool cuda);

}  // namespace qgpu::io
