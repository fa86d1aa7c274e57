#pragma once
// `qgpu convert` / quantem.gpu.io.convert: any acquisition the source layer reads (with the load's regions, bins and
// pixel mask) written as a DECTRIS-style bitshuffle+LZ4 HDF5 file (io/hdf5/write_dectris.hpp), or as a 4D .npy with
// a JSON sidecar. The counts are those of the load, bit for bit (a load of the output equals the load of the source).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "io/hdf5/load.hpp"

namespace qgpu::io {

struct ConvertOptions {
  std::string to = "h5";        // "h5" (DECTRIS-style bitshuffle+LZ4) | "npy" (+ OUT.json sidecar)
  unsigned threads = 0;         // encoder threads (0 = one per core)
  std::size_t batch_bytes = 0;  // decoded frames read back and encoded per batch (0 = 256 MiB, >= one scan row)
  std::size_t block_elems = 0;  // bitshuffle block in elements (0 = the plugin's default)
  std::function<void(double)> progress;  // fraction of frames written
};

struct ConvertResult {
  std::string path, sidecar;  // the output (and the .npy's JSON sidecar)
  Shape4D shape;
  DType dtype = DType::u16;
  std::uint64_t dense_bytes = 0, file_bytes = 0;
  double load_seconds = 0, write_seconds = 0;
  nlohmann::json calibration = nlohmann::json::object();  // of the output ({key: value}), region/binning applied
  nlohmann::json provenance;                              // what the output carries
};

// Checks the output path (absent or a regular file) and the options, loads `in` with `load` and writes `out`
// atomically. Calibration of the output: the source's, with scan_step_angstrom x bin_scan,
// detector_mrad_per_pixel / detector_pixel_size_m x bin_detector, disk_radius_px / bin_detector and the beam centre
// moved into the detector region and binned; pixel mask (the file's or the given one) cut to the region and binned
// (a binned pixel is bad when any of its pixels is). Float data: NaN/inf were set to 0 by the load, so the output
// holds 0 there (counted in the provenance).
ConvertResult convert(const std::string& in, const std::string& out, const LoadOptions& load,
                      const ConvertOptions& options = {});

}  // namespace qgpu::io
