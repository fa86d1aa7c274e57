#pragma once
// Blocks of frames for the browser: a scan window, optionally with the detector binned exactly, as uint32,
// and the browse plan (which exact integer bins exist and what each costs).
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image.hpp"
#include "resident/dataset.hpp"

namespace qgpu::remote {

inline constexpr std::size_t kDefaultWindowLimitBytes = std::size_t(256) << 20;

// Bytes of a rows x cols scan window at detector bin `bin`, as uint32 (0 when bin does not divide).
std::size_t window_bytes(const Shape4D& s, std::size_t rows, std::size_t cols, std::size_t bin);

// The window [row0, row0 + rows) x [col0, col0 + cols) as uint32 counts, [row][col][det_r / bin][det_c / bin].
// RegionError when the window leaves the scan, InvalidArgument when bin does not divide the detector or a
// binned sum exceeds uint32, HttpError 400 naming the limit when the result would exceed limit_bytes.
struct FrameWindow {
  Shape4D shape;
  std::vector<std::uint32_t> counts;
};
FrameWindow read_window(const Dataset& ds, const Region& scan, std::size_t bin, std::size_t limit_bytes);

// One scan position's frame, widened to its sums' type (uint64 counts, int64 signed data, float64 float data).
SumImage read_frame_values(const Dataset& ds, std::size_t row, std::size_t col);

// Common divisors of a and b, ascending.
std::vector<std::size_t> exact_bins(std::size_t a, std::size_t b);

// {shape, dtype, window_limit_bytes, detector_bins, scan_bins, options: [{bin_scan, bin_detector, shape, bytes,
// fits_window}], frame_bytes_by_detector_bin}.
nlohmann::json browse_plan(const Shape4D& s, const std::string& dtype, std::size_t limit_bytes);

}  // namespace qgpu::remote
