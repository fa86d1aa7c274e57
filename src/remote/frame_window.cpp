#include "remote/frame_window.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "remote/http_error.hpp"

namespace qgpu::remote {

namespace {

template <class T> std::uint32_t at_u32(const HostArray4D& h, std::size_t i) {
  return static_cast<std::uint32_t>(h.as<T>()[i]);
}

// "256 MiB (268435456 bytes)", or "65536 bytes" below 1 MiB.
std::string limit_text(std::size_t bytes) {
  const std::size_t mib = std::size_t(1) << 20;
  if (bytes < mib) return std::to_string(bytes) + " bytes";
  return std::to_string(bytes / mib) + " MiB (" + std::to_string(bytes) + " bytes)";
}

}  // namespace

std::size_t window_bytes(const Shape4D& s, std::size_t rows, std::size_t cols, std::size_t bin) {
  if (bin == 0 || s.det_rows % bin || s.det_cols % bin) return 0;
  return rows * cols * (s.det_rows / bin) * (s.det_cols / bin) * sizeof(std::uint32_t);
}

FrameWindow read_window(const Dataset& ds, const Region& scan, std::size_t bin, std::size_t limit_bytes) {
  const Shape4D& s = ds.shape();
  if (bin == 0 || s.det_rows % bin || s.det_cols % bin)
    throw InvalidArgument("bin " + std::to_string(bin) + " does not divide the detector " + std::to_string(s.det_rows) +
                          "x" + std::to_string(s.det_cols) + " exactly (see browse_plan for the exact bins)");
  const Region r = resolve_region(scan, s.scan_rows, s.scan_cols, "scan");
  const std::size_t bytes = window_bytes(s, r.rows, r.cols, bin);
  if (bytes > limit_bytes)
    throw HttpError(400, "window of " + std::to_string(bytes) + " bytes exceeds the limit of " + limit_text(limit_bytes) +
                             ": ask for fewer frames or a larger bin");
  if (!is_count_dtype(ds.dtype()))
    throw HttpError(400, "the frame window (the browser's WebGPU virtual detectors) holds unsigned counts; this dataset "
                         "holds " + dtype_name(ds.dtype()) + ": the server computes its images");
  const HostArray4D h = ds.read(r);
  FrameWindow w;
  w.shape = Shape4D{r.rows, r.cols, s.det_rows / bin, s.det_cols / bin};
  w.counts.assign(w.shape.elements(), 0);
  dispatch_count_dtype(h.dtype, [&](auto t) {
    using T = decltype(t);
    const T* src = h.as<T>();
    const std::size_t dr = s.det_rows, dc = s.det_cols, br = w.shape.det_rows, bc = w.shape.det_cols;
    for (std::size_t f = 0; f < w.shape.frames(); ++f)
      for (std::size_t i = 0; i < br; ++i)
        for (std::size_t j = 0; j < bc; ++j) {
          std::uint64_t sum = 0;
          for (std::size_t a = 0; a < bin; ++a)
            for (std::size_t b = 0; b < bin; ++b) sum += src[(f * dr + i * bin + a) * dc + j * bin + b];
          if (sum > std::numeric_limits<std::uint32_t>::max())
            throw InvalidArgument("binned sum " + std::to_string(sum) + " exceeds uint32 at frame " +
                                  std::to_string(f) + "; use a smaller bin");
          w.counts[(f * br + i) * bc + j] = static_cast<std::uint32_t>(sum);
        }
  });
  return w;
}

SumImage read_frame_values(const Dataset& ds, std::size_t row, std::size_t col) {
  const HostArray4D h = ds.read(Region{row, col, 1, 1});
  return dispatch_stored_dtype(h.dtype, [&](auto t) -> SumImage {
    using T = decltype(t);
    Image<sum_t<T>> img;
    img.rows = h.shape.det_rows;
    img.cols = h.shape.det_cols;
    img.data.assign(h.as<T>(), h.as<T>() + h.shape.elements());
    return img;
  });
}

std::vector<std::size_t> exact_bins(std::size_t a, std::size_t b) {
  std::vector<std::size_t> out;
  for (std::size_t k = 1; k <= std::min(a, b); ++k)
    if (a % k == 0 && b % k == 0) out.push_back(k);
  return out;
}

nlohmann::json browse_plan(const Shape4D& s, const std::string& dtype, std::size_t limit_bytes) {
  const auto det_bins = exact_bins(s.det_rows, s.det_cols);
  const auto scan_bins = exact_bins(s.scan_rows, s.scan_cols);
  nlohmann::json options = nlohmann::json::array(), frame_bytes = nlohmann::json::object();
  for (std::size_t bd : det_bins) {
    frame_bytes[std::to_string(bd)] = window_bytes(s, 1, 1, bd);
    for (std::size_t bs : scan_bins) {
      const Shape4D o{s.scan_rows / bs, s.scan_cols / bs, s.det_rows / bd, s.det_cols / bd};
      const std::size_t bytes = o.elements() * sizeof(std::uint32_t);
      options.push_back({{"bin_scan", bs}, {"bin_detector", bd}, {"shape", o.dims()}, {"bytes", bytes},
                         {"fits_window", bs == 1 && bytes <= limit_bytes}});
    }
  }
  return {{"shape", s.dims()},
          {"dtype", dtype},
          {"window_dtype", "uint32"},
          {"window_limit_bytes", limit_bytes},
          {"detector_bins", det_bins},
          {"scan_bins", scan_bins},
          {"frame_bytes_by_detector_bin", frame_bytes},
          {"options", options},
          {"note", "window?bin= takes a detector bin; scan binning is a load option (bytes given for planning)"}};
}

}  // namespace qgpu::remote
