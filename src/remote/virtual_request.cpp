#include "remote/virtual_request.hpp"

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "detector/virtual_detector.hpp"
#include "remote/http_error.hpp"

namespace qgpu::remote {

VirtualRequest parse_virtual(const Params& p) {
  VirtualRequest v;
  v.kind = p.choice("kind", {"bf", "adf", "annulus", "disk"}, "bf");
  v.cr = p.number("cr");
  v.cc = p.number("cc");
  if (v.cr.has_value() != v.cc.has_value()) throw HttpError(400, "give both 'cr' and 'cc' (detector centre) or neither");
  v.r = p.non_negative("r");
  if (v.kind == "disk" && !v.r) throw HttpError(400, "parameter 'r' is required for kind=disk");
  if (v.kind == "adf" || v.kind == "annulus") {
    v.inner = p.required_non_negative("inner");
    v.outer = p.required_non_negative("outer");
    if (*v.inner > *v.outer) throw HttpError(400, "parameter 'inner' must not exceed 'outer'");
  }
  return v;
}

Image<std::uint64_t> compute_virtual(const Dataset& ds, const VirtualRequest& v) {
  std::optional<detector::Center> center;
  if (v.cr) center = detector::Center{*v.cr, *v.cc};
  if (v.kind == "bf") return detector::bf(ds, v.r, center);
  if (v.kind == "disk") {
    if (!center) {
      const detector::DiskFit fit = detector::fit_bf_disk(ds);
      center = detector::Center{fit.center_row, fit.center_col};
    }
    return detector::df(ds, *center, *v.r);
  }
  return detector::adf(ds, *v.inner, *v.outer, center);
}

detector::Mask parse_mask_body(const std::string& body, const std::string& content_type, std::size_t det_rows,
                               std::size_t det_cols) {
  std::vector<std::uint32_t> w;
  if (content_type.rfind("application/json", 0) == 0) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weights") || !j["weights"].is_array())
      throw HttpError(400, "mask body must be JSON {\"weights\": [...]} with det_rows * det_cols integers");
    if ((j.contains("rows") && j["rows"] != det_rows) || (j.contains("cols") && j["cols"] != det_cols))
      throw HttpError(400, "mask rows/cols do not match the detector " + std::to_string(det_rows) + "x" +
                               std::to_string(det_cols));
    for (const auto& x : j["weights"]) {
      if (!x.is_number_unsigned() || x.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max())
        throw HttpError(400, "mask weights must be integers in 0..4294967295");
      w.push_back(x.get<std::uint32_t>());
    }
  } else {
    if (body.size() != det_rows * det_cols * 4)
      throw HttpError(400, "raw mask must hold det_rows * det_cols = " + std::to_string(det_rows * det_cols) +
                               " little-endian uint32 weights (" + std::to_string(det_rows * det_cols * 4) +
                               " bytes), got " + std::to_string(body.size()) + " bytes");
    w.resize(det_rows * det_cols);
    std::memcpy(w.data(), body.data(), body.size());
  }
  return detector::from_weights(det_rows, det_cols, std::move(w));  // InvalidArgument -> 400
}

}  // namespace qgpu::remote
