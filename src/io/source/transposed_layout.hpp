#pragma once
// Files whose detector pixel varies slowest (a Fortran-order .npy, an old-layout Gatan DM 4D image): element
// (sr, sc, dr, dc) lies at element index
//   scan_pos(sr, sc) + frames * det_pos(dr, dc)
// with scan_pos = sr + scan_rows * sc (4D Fortran order: the scan row varies fastest) or sc + scan_cols * sr (3D
// Fortran order of frames in C-order scan order; DM), det_pos = dr + det_rows * dc (Fortran order) or
// dc + det_cols * dr (DM: the detector column fastest). Every frame is scattered over the whole file, so such a file is no
// frame records: the loaders (io/source/load_transposed.hpp) read contiguous slabs of it and scatter them into the
// resident [scan_r][scan_c][det_r][det_c] layout (crop, bin and pixel mask applied in the scatter). The mapping
// below is the one the host and the GPU scatter share.
#include <cstdint>

#include "core/hd.hpp"

namespace qgpu::io {

// FileInfo::transposed: present for files stored this way (their FileInfo::records name the file, no runs).
struct TransposedLayout {
  bool present = false;
  std::uint64_t offset = 0;        // byte offset of element 0
  bool scan_rows_fastest = true;   // scan_pos = sr + scan_rows * sc (else sc + scan_cols * sr)
  bool det_rows_fastest = true;    // det_pos = dr + det_rows * dc (else dc + det_cols * dr)
};

// Everything the scatter of one slab needs: the stored shape, element size and byte order, and the load's regions,
// bins and output shape (all in elements/pixels).
struct TransposedGeometry {
  std::uint64_t elem_size = 2;
  bool swap = false;               // stored big-endian: bytes of each element reversed
  bool scan_rows_fastest = true;
  bool det_rows_fastest = true;
  std::uint64_t scan_rows = 0, scan_cols = 0, det_rows = 0, det_cols = 0;  // as stored
  std::uint64_t sr0 = 0, sc0 = 0, srows = 0, scols = 0;  // scan region
  std::uint64_t dr0 = 0, dc0 = 0, drows = 0, dcols = 0;  // detector region
  std::uint64_t bin_scan = 1, bin_det = 1;
  std::uint64_t out_scan_cols = 0, out_det_rows = 0, out_det_cols = 0;
  QGPU_HD std::uint64_t frames() const { return scan_rows * scan_cols; }
};

// Where stored element e goes: false when it lies outside the regions; else the output element index (binned: the
// index of the sum it adds to) and its detector pixel (dr * det_cols + dc, for the pixel mask).
QGPU_HD inline bool transposed_target(const TransposedGeometry& g, std::uint64_t e, std::uint64_t& out,
                                      std::uint64_t& pixel) {
  const std::uint64_t F = g.frames();
  const std::uint64_t q = e / F, pos = e - q * F;
  std::uint64_t dr, dc;
  if (g.det_rows_fastest) {
    dc = q / g.det_rows;
    dr = q - dc * g.det_rows;
  } else {
    dr = q / g.det_cols;
    dc = q - dr * g.det_cols;
  }
  std::uint64_t sr, sc;
  if (g.scan_rows_fastest) {
    sc = pos / g.scan_rows;
    sr = pos - sc * g.scan_rows;
  } else {
    sr = pos / g.scan_cols;
    sc = pos - sr * g.scan_cols;
  }
  // (unsigned: a coordinate before the region wraps to a large value)
  const std::uint64_t r = sr - g.sr0, c = sc - g.sc0, y = dr - g.dr0, x = dc - g.dc0;
  if (r >= g.srows || c >= g.scols || y >= g.drows || x >= g.dcols) return false;
  pixel = dr * g.det_cols + dc;
  out = (((r / g.bin_scan) * g.out_scan_cols + c / g.bin_scan) * g.out_det_rows + y / g.bin_det) * g.out_det_cols +
        x / g.bin_det;
  return true;
}

}  // namespace qgpu::io
