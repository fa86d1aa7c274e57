#include "io/hdf5/scan_shape.hpp"

#include <cmath>

#include "core/error.hpp"

namespace qgpu::io {

ScanShape resolve_scan_shape(std::uint64_t frames, const ScanShapeHints& h, const std::string& where) {
  const std::string n = std::to_string(frames);
  const bool metadata = h.ntrigger > 0 || h.nimages > 0;
  const std::uint64_t ntrigger = h.ntrigger > 0 ? std::uint64_t(h.ntrigger) : 1;
  const std::uint64_t nimages = h.nimages > 0 ? std::uint64_t(h.nimages) : 1;
  if (h.ntrigger < 0 || h.nimages < 0)
    throw FormatError(where + " has negative ntrigger/nimages metadata (" + std::to_string(h.ntrigger) + ", " +
                      std::to_string(h.nimages) + ")");
  if (metadata) {
    // EIGER: ntrigger x nimages frames. Some ARINA-style masters state the frame count in ntrigger (or nimages)
    // alone: accept any reading that matches; none matching means data files are missing or extra.
    const std::uint64_t expected = checked_mul(ntrigger, nimages, "ntrigger x nimages of " + where);
    const bool consistent = expected == frames || (h.ntrigger > 0 && ntrigger == frames) ||
                            (h.nimages > 0 && nimages == frames);
    if (!consistent)
      throw FormatError(where + ": the master's metadata announces ntrigger " + std::to_string(ntrigger) +
                        " x nimages " + std::to_string(nimages) + " = " + std::to_string(expected) +
                        " frames but the data hold " + n + " (a data file missing or an acquisition cut short)");
  }
  if (h.given_rows || h.given_cols) {
    const std::uint64_t product = checked_mul<RegionError>(h.given_rows, h.given_cols, "given scan shape");
    if (product != frames || frames == 0)
      throw FormatError("given scan shape " + std::to_string(h.given_rows) + "x" + std::to_string(h.given_cols) +
                        " does not match the " + n + " frames of " + where);
    return {h.given_rows, h.given_cols, "given"};
  }
  if (h.dataset_dims.size() == 2) return {h.dataset_dims[0], h.dataset_dims[1], "dataset dims"};
  if (h.attribute.size() == 2 && h.attribute[0] > 0 && h.attribute[1] > 0) {
    const auto r = std::uint64_t(h.attribute[0]), c = std::uint64_t(h.attribute[1]);
    if (checked_mul(r, c, "scan_shape attribute of " + where) != frames)
      throw FormatError(where + " attribute scan_shape " + std::to_string(r) + "x" + std::to_string(c) +
                        " does not match its " + n + " frames");
    return {r, c, "attribute scan_shape"};
  }
  if (h.sidecar.size() == 2 && h.sidecar[0] > 0 && h.sidecar[1] > 0) {
    const auto r = std::uint64_t(h.sidecar[0]), c = std::uint64_t(h.sidecar[1]);
    if (checked_mul(r, c, h.sidecar_source + " of " + where) != frames)
      throw FormatError(h.sidecar_source + " = " + std::to_string(r) + " x " + std::to_string(c) + " = " +
                        std::to_string(r * c) + " scan positions, but " + where + " holds " + n +
                        " frames: give scan_shape (--scan-shape ROWS COLS)");
    return {r, c, h.sidecar_source};
  }
  if (ntrigger > 1 && nimages > 1 && ntrigger * nimages == frames) return {ntrigger, nimages, "metadata ntrigger x nimages"};
  const auto side = static_cast<std::uint64_t>(std::llround(std::sqrt(double(frames))));
  for (std::uint64_t s : {side - 1, side, side + 1})  // guard the double rounding for large counts
    if (s > 0 && s <= UINT32_MAX && s * s == frames) return {s, s, "square frame count"};
  throw FormatError(where + " has " + n + " frames, no scan_shape attribute and no square scan: give scan_shape "
                    "(--scan-shape ROWS COLS; Python scan_shape=(rows, cols))");
}

}  // namespace qgpu::io
