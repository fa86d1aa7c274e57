#pragma once
// The BF-disk pixel grouping SSB and parallax share: the detector pixels each uses (SSB: inside the aperture in
// k-space; parallax: within disk_radius - edge_px) summed in bin x bin blocks of the WHOLE detector's grid. A detector
// crop (the MPI run's gathered BF-disk box, workflow::bf_disk_box) passes its origin on the whole detector so that it
// groups the same pixels as the whole detector does.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qgpu::optics {

struct DetectorOrigin {  // of a crop on the whole detector, pixels
  std::size_t row = 0, col = 0;
};

// `pixels`: flat indices r * det_cols + c into the (cropped) detector. Block of pixel (r, c):
// ((r + origin.row) / bin, (c + origin.col) / bin). Groups in block raster order; within a group the pixels keep
// their order in `pixels`. InvalidArgument for bin == 0 or det_cols == 0.
std::vector<std::vector<std::uint32_t>> group_pixels(const std::vector<std::uint32_t>& pixels, std::size_t det_cols,
                                                     std::size_t bin, DetectorOrigin origin = {});

}  // namespace qgpu::optics
