#pragma once
// How the pixels of one Merlin (Quantum Detectors) .mib frame are stored, and the frame they decode to.
// Derived from a frame header by merlin::pixel_format (mib_header.hpp); used by the host and the CUDA decoders
// (mib_decode.hpp, cuda/decode_mib.hpp), so it is a plain struct of HD-callable members.
//
// Stored forms (docs/design.md, "Merlin .mib"):
//   binary (pixel types U01/U08/U16/U32): big-endian unsigned, frame as stored (height x width of the header;
//     quad frames arrive assembled, 512x512, or 514x514 with the 2-pixel gap cross of the 2x2G layout);
//   raw (R64, "FILEFORMAT 2"): counter depth 1 (bit-packed, 64 pixels per 8 bytes, the 8 bytes reversed),
//     6 (u8, groups of 8 reversed), 12 (>u2, groups of 4 reversed), 24 (two 12-bit images back to back, the first
//     the high 12 bits); quad raw rows hold [chip 4 | chip 3 | chip 2 | chip 1] half rows, chips 3 and 4 flipped in
//     both directions (LiberTEM mib.py, LiberTEM-rs libertem_qd_mpx).
#include <cstdint>

#include "core/dtype.hpp"
#include "core/hd.hpp"

namespace qgpu::io::merlin {

// Field 6 of the frame header.
enum class PixelType : std::uint8_t { U01, U08, U16, U32, U64, R64 };
// Field 7 of the frame header ("   1x1", "   2x2", "2x2G", "Nx1", "Nx1G"; a digit may stand for N).
enum class Layout : std::uint8_t { L1x1, L2x2, L2x2G, Nx1, Nx1G };

const char* pixel_type_name(PixelType t);
const char* layout_name(Layout l);

struct PixelFormat {
  std::uint32_t counter_depth = 0;  // 1, 6, 12 or 24; 0 = not stated (binary U08 without MQ1A or .hdr: 1 or 6)
  bool raw = false;                 // R64: raw chip readout
  Layout layout = Layout::L1x1;
  std::uint32_t chips = 1;
  PixelType stored = PixelType::U08;
  std::uint64_t payload_bytes = 0;  // pixel bytes of one frame (after its header)
  std::uint32_t rows = 0, cols = 0;  // the decoded frame (after quad assembly): 256x256, 512x512, 514x514, ROI
  std::uint32_t chip = 0;            // raw quad: chip side in pixels (the raw image is chip x 4 chip per 12-bit part)
  DType out_dtype = DType::u8;       // u8 for 1 and 6 bit, u16 for 12, u32 for 24
  // Orientation (docs/conventions.md): false = rows as stored (LiberTEM); true = rows flipped (rosettasciio's
  // np.flip(axis=-2)). Not in the file: the loader sets it from the user's option.
  bool flip_rows = false;

  QGPU_HD std::uint64_t frame_pixels() const { return std::uint64_t(rows) * cols; }
  QGPU_HD std::uint32_t out_bytes() const {  // bytes per decoded pixel
    return out_dtype == DType::u8 ? 1u : out_dtype == DType::u16 ? 2u : 4u;
  }
  QGPU_HD std::uint64_t frame_bytes_out() const { return frame_pixels() * out_bytes(); }
  QGPU_HD bool quad_raw() const { return raw && chips == 4; }
  QGPU_HD bool gap() const { return layout == Layout::L2x2G; }
};

// Largest decoded frame accepted (pixels): keeps every index inside one frame within 32 bits in the kernels.
inline constexpr std::uint64_t kMaxFramePixels = std::uint64_t(1) << 30;

}  // namespace qgpu::io::merlin
