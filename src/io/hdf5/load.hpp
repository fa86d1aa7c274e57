#pragma once
// Public load API: HDF5 4D-STEM file -> resident Dataset (GPU for cuda, host memory for cpu).
#include <cstddef>
#include <functional>
#include <string>

#include "io/hdf5/file_info.hpp"
#include "resident/dataset.hpp"

namespace qgpu::io {

struct LoadOptions {
  std::string backend = "auto";  // "cuda" | "cpu" | "auto"
  std::string dataset_path;      // "" discovers
  std::size_t scan_rows = 0, scan_cols = 0;  // override the stored scan shape
  Region scan_region;            // default: whole scan
  Region detector_region;        // default: whole detector
  std::size_t bin_scan = 1;      // exact integer sums over bin_scan x bin_scan probe positions
  std::size_t bin_detector = 1;  // exact integer sums over bin_detector x bin_detector pixels
  // "keep" (default) | "zero": set the detector's bad pixels (master pixel_mask > 0) to 0 in every frame, on the
  // full stored frame before detector cropping and binning. "zero" without a pixel mask in the file: IoError.
  std::string pixel_mask = "keep";
  std::size_t batch_bytes = 0;   // cuda: compressed bytes read per batch (0 = 512 MiB); a tuning knob
  std::function<void(double)> progress;  // fraction done in [0, 1], called from the loading thread
};

// Loads a file. Binned data holds uint32 sums (an overflow raises FormatError); unbinned data keeps its dtype.
Dataset load(const std::string& path, const LoadOptions& options = {});

// The validated geometry of a load: regions resolved, bins checked, output shape and dtype.
struct LoadPlan {
  FileInfo info;
  Region scan;
  Region detector;
  std::size_t bin_scan = 1, bin_detector = 1;
  Shape4D out_shape;
  std::size_t batch_bytes = std::size_t(512) << 20;
  DType out_dtype = DType::u16;
  std::string pixel_mask = "keep";  // as asked
  bool zero_bad_pixels = false;     // pixel_mask "zero" and bad pixels listed: zero them in every full frame first
  bool binned() const { return bin_scan > 1 || bin_detector > 1; }
  bool full_frames() const {
    return detector.rows == info.shape.det_rows && detector.cols == info.shape.det_cols && bin_detector == 1;
  }
};

LoadPlan plan_load(const std::string& path, const LoadOptions& options);

}  // namespace qgpu::io
