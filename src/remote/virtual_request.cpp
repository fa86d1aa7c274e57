#include "remote/virtual_request.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
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
  v.scan_bin = scan_bin_of(p);
  return v;
}

std::size_t scan_bin_of(const Params& p) {
  const std::size_t b = p.index("scan_bin").value_or(1);
  if (b == 0) throw HttpError(400, "parameter 'scan_bin' must be >= 1 (1: every scan position)");
  return b;
}

SumImage compute_virtual(const Dataset& ds, const VirtualRequest& v) {
  std::optional<detector::Center> center;
  if (v.cr) center = detector::Center{*v.cr, *v.cc};
  if (v.kind == "bf") return detector::bf(ds, v.r, center, v.scan_bin);
  if (v.kind == "disk") {
    if (!center) {
      const detector::DiskFit fit = detector::fit_bf_disk(ds);
      center = detector::Center{fit.center_row, fit.center_col};
    }
    return detector::df(ds, *center, *v.r, v.scan_bin);
  }
  return detector::adf(ds, *v.inner, *v.outer, center, v.scan_bin);
}

std::size_t mask_body_limit(std::size_t det_rows, std::size_t det_cols) {
  const std::size_t n = checked_mul<InvalidArgument>(det_rows, det_cols, "detector pixels");
  return checked_add<InvalidArgument>(checked_mul<InvalidArgument>(n, 11, "mask body bound"), 4096, "mask body bound");
}

namespace {

// Little-endian raw weights of one dtype, each an integer in 0..uint32 max.
std::vector<std::uint32_t> raw_weights(const std::string& body, const std::string& dtype, std::size_t n) {
  const std::size_t es = dtype == "uint8" ? 1 : 4;
  if (dtype != "uint8" && dtype != "uint32" && dtype != "int32" && dtype != "float32")
    throw HttpError(400, "raw mask dtype must be one of uint8, uint32, int32, float32; got '" + dtype + "'");
  if (body.size() != n * es)
    throw HttpError(400, "raw mask must hold det_rows * det_cols = " + std::to_string(n) + " little-endian " + dtype +
                             " weights (" + std::to_string(n * es) + " bytes), got " + std::to_string(body.size()) +
                             " bytes");
  std::vector<std::uint32_t> w(n);
  const auto* b = reinterpret_cast<const unsigned char*>(body.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (es == 1) {
      w[i] = b[i];
      continue;
    }
    const std::uint32_t u = std::uint32_t(b[4 * i]) | std::uint32_t(b[4 * i + 1]) << 8 |
                            std::uint32_t(b[4 * i + 2]) << 16 | std::uint32_t(b[4 * i + 3]) << 24;
    if (dtype == "uint32") {
      w[i] = u;
    } else if (dtype == "int32") {
      if (std::int32_t(u) < 0) throw HttpError(400, "mask weight " + std::to_string(i) + " is negative");
      w[i] = u;
    } else {
      float f = 0;
      std::memcpy(&f, &u, 4);
      if (!(f >= 0) || f > 4294967295.0f || f != std::floor(f))
        throw HttpError(400, "float32 mask weight " + std::to_string(i) + " is " + std::to_string(f) +
                                 "; weights are whole numbers in 0..4294967295");
      w[i] = static_cast<std::uint32_t>(f);
    }
  }
  return w;
}

}  // namespace

detector::Mask parse_mask_body(const std::string& body, const std::string& content_type, std::size_t det_rows,
                               std::size_t det_cols, const std::string& dtype) {
  const std::size_t limit = mask_body_limit(det_rows, det_cols);
  if (body.size() > limit)
    throw HttpError(413, "mask body of " + std::to_string(body.size()) + " bytes exceeds " + std::to_string(limit) +
                             " bytes, the most a " + std::to_string(det_rows) + "x" + std::to_string(det_cols) +
                             " detector mask needs (send raw weights as application/octet-stream)");
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
    w = raw_weights(body, dtype.empty() ? "uint32" : dtype, det_rows * det_cols);
  }
  return detector::from_weights(det_rows, det_cols, std::move(w));  // InvalidArgument -> 400
}

}  // namespace qgpu::remote
