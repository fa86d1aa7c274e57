#pragma once
// The simulated sample as an MRC file (for tests of the mrc reader): a 1024-byte MRC2014 header ("MAP ", machine
// stamp of the byte order, NEXT extended-header bytes of zeros) and the frames, NZ = scan_rows x scan_cols frames of
// NY = det_rows x NX = det_cols.
#include <cstdint>
#include <functional>
#include <string>

#include "io/sample/sample.hpp"

namespace qgpu::sample {

// s.dtype: int8 (MODE 0), int16 (1), float32 (2) or uint16 (6); the simulated uint16 counts are clipped to the
// dtype's largest value. s.big_endian: big-endian elements and header (machine stamp 0x11 0x11).
void write_sample_mrc(const std::string& path, const SampleSpec& s, std::uint32_t extended_header_bytes = 0,
                      const std::function<void(double)>& progress = {});

}  // namespace qgpu::sample
