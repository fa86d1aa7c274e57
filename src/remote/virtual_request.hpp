#pragma once
// A virtual detector as asked over HTTP: kind bf | adf | annulus | disk with centre (cr, cc) and radii.
// Missing centres (and the BF radius) come from the fitted bright-field disk.
#include <cstdint>
#include <optional>
#include <string>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "remote/params.hpp"
#include "resident/dataset.hpp"

namespace qgpu::remote {

struct VirtualRequest {
  std::string kind = "bf";
  std::optional<double> cr, cc;  // centre (row, col), both or neither
  std::optional<double> r;       // bf (optional), disk (required)
  std::optional<double> inner, outer;  // adf / annulus (required)
  std::size_t scan_bin = 1;            // exact sums over scan_bin x scan_bin positions (a divisor of the scan)
};

// Validates the query (HttpError 400 naming the parameter).
VirtualRequest parse_virtual(const Params& p);
// The `scan_bin` parameter (default 1; 0 is 400; one that does not divide the scan is 400 where it is used).
std::size_t scan_bin_of(const Params& p);

// Exact uint64 image on the dataset's backend (scan-binned when asked).
SumImage compute_virtual(const Dataset& ds, const VirtualRequest& v);

// A mask from a POST body: JSON {"weights": [...], "rows"?, "cols"?} or raw little-endian weights
// (content type application/octet-stream) of `dtype` uint8 | uint32 (default) | int32 | float32, det_rows x
// det_cols. HttpError 413 for a body longer than mask_body_limit, 400 for anything else wrong.
detector::Mask parse_mask_body(const std::string& body, const std::string& content_type, std::size_t det_rows,
                               std::size_t det_cols, const std::string& dtype = "");

// The longest mask body a detector can need: its JSON form with every weight at 10 digits, plus slack.
std::size_t mask_body_limit(std::size_t det_rows, std::size_t det_cols);

}  // namespace qgpu::remote
