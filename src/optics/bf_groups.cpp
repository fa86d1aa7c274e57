// BF-disk pixel groups on the whole detector's grid (bf_groups.hpp).
#include "optics/bf_groups.hpp"

#include <map>
#include <utility>

#include "core/error.hpp"

namespace qgpu::optics {

std::vector<std::vector<std::uint32_t>> group_pixels(const std::vector<std::uint32_t>& pixels, std::size_t det_cols,
                                                     std::size_t bin, DetectorOrigin origin) {
  if (bin == 0) throw InvalidArgument("optics: detector bin must be >= 1");
  if (det_cols == 0) throw InvalidArgument("optics: the detector has no columns");
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::uint32_t>> blocks;
  for (std::uint32_t q : pixels) blocks[{(q / det_cols + origin.row) / bin, (q % det_cols + origin.col) / bin}].push_back(q);
  std::vector<std::vector<std::uint32_t>> groups;
  groups.reserve(blocks.size());
  for (auto& [key, pix] : blocks) groups.push_back(std::move(pix));
  return groups;
}

}  // namespace qgpu::optics
