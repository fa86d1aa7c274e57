// CoM on an encoded dataset: the exact sums S, Sr, Sc come from the radial basis when the mask is a union of its
// shells, else from the encoded resident's moment sums (EncodedResident::moment_sums: the mask's streams decoded with
// weights 1, det_row, det_col, or the stored totals and moment totals minus the cheaper complement's), then the same
// host/device arithmetic as the dense backends (com_math.hpp): identical float bits. A GPU-resident dataset stays
// on the device until the float maps (com_encoded_cuda, cuda/com_encoded_cuda.cu).
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::dpc::detail {

nlohmann::json basis_json(const RadialBasis& b, const RadialBasis::Ranges& shells) {
  return {{"center", {b.center_row(), b.center_col()}}, {"radii", RadialBasis::radii_json(shells)}};
}

ComMaps com_encoded(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep) {
  const EncodedResident* e = ds.encoded();
  if (!e) throw Error("encoded CoM on a dense dataset");
  if (e->backend() == Backend::cuda) return com_encoded_cuda(ds, mask, keep);
  const Shape4D& sh = ds.shape();
  const RadialBasis* basis = e->radial_basis();
  const auto shells = basis ? basis->match(mask) : std::nullopt;
  std::vector<std::vector<std::uint64_t>> sums;
  std::string used;
  if (shells) {  // the mask is a union of the basis' shells: S, Sr, Sc from its prefix images
    sums = {mask ? basis->sums(*shells, 0) : e->frame_totals(), basis->sums(*shells, 1), basis->sums(*shells, 2)};
  } else {  // the mask's streams, or the totals and moment totals minus the complement's
    sums = e->moment_sums(mask, &used);
  }
  const std::size_t frames = sh.frames();
  const double centre_r = (double(sh.det_rows) - 1) / 2, centre_c = (double(sh.det_cols) - 1) / 2;
  const std::uint64_t max_index = std::max(sh.det_rows, sh.det_cols) - 1;
  ComMaps out;
  if (shells) out.radial_basis = basis_json(*basis, *shells);
  out.encoded_sums = used;
  out.row.resize(frames);
  out.col.resize(frames);
  for (std::size_t f = 0; f < frames; ++f) {
    if (com_sums_may_wrap(sums[0][f], max_index))
      throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
    if (sums[0][f] == 0) ++out.empty_frames;
    com_from_sums(sums[0][f], sums[1][f], sums[2][f], centre_r, centre_c, out.row[f], out.col[f]);
  }
  return out;
}

}  // namespace qgpu::dpc::detail
