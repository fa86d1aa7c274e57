#pragma once
// RadialBasis: exact prefix images of a dataset's frames over detector shells around one centre, built while the
// frames are loaded (EncodedResident::append feeds every batch before it is encoded), so that a centred BF disk, an
// annulus / ADF ring or the CoM sums over them are answered from one or two stored images per quantity instead of
// decoding every count of every frame (docs/design.md "Radial basis").
//
// Shells: pixel (r, c) is at d2 = (r - center_row)^2 + (c - center_col)^2, computed exactly as detector/mask.cpp
// rasterises its disks and annuli (doubles, pixel centres at integers). Boundary k = 1..K is the disk d2 <= k^2; shell
// i (0-based) holds the pixels inside boundary i + 1 and outside boundary i (shell 0: d2 <= 1). K is the smallest
// integer radius whose disk holds every detector pixel, so the last boundary is the whole detector.
// Stored per boundary and scan position: the counts inside it, and their det_row- and det_col-weighted sums (the CoM
// sums), each an exact uint32 (the build checks every value and drops the basis, with a reason, if one would not fit).
// A 0/1 mask equal to a union of shells (match) is then answered by differences of prefix images: the same integers
// as any masked sum over the same pixels.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "device/device.hpp"
#include "resident/shape.hpp"

struct CUstream_st;

namespace qgpu {

namespace basis::cuda {
struct BinnedAccumulator;
}

// What a load asks for (LoadOptions::radial_basis, Dataset::to_encoded).
struct RadialBasisRequest {
  bool enabled = false;
  bool required = false;  // true: failing to build it (memory, overflow, no disk) is an error, not a reported skip
  std::optional<std::pair<double, double>> center;  // (row, col); default: the disk fit of the first batch's sum
};

class RadialBasis {
 public:
  static constexpr int kQuantities = 3;  // 0: counts, 1: counts x det_row, 2: counts x det_col
  static constexpr std::uint32_t kMaxBoundaries = 2048;  // shared-memory histograms of the CUDA build

  // Shells of a det_rows x det_cols detector around (center_row, center_col); the prefix images of `frames` scan
  // positions allocated on `backend` (OutOfMemory when they do not fit; InvalidArgument for a centre that is not
  // finite or a detector needing more than kMaxBoundaries boundaries).
  RadialBasis(const Shape4D& shape, DType dtype, Backend backend, double center_row, double center_col);
  ~RadialBasis();

  // Bytes the prefix images of this shape and centre would take (checked arithmetic; for the admission of a load).
  static std::size_t bytes_for(const Shape4D& shape, double center_row, double center_col);
  // The summed pattern of `count` frames (host memory for cpu, device memory for cuda, on `stream`): the first
  // batch's, to fit the basis centre.
  static std::vector<std::uint64_t> batch_sum_pattern(const Shape4D& shape, DType dtype, Backend backend,
                                                      const void* frames, std::size_t count, CUstream_st* stream);

  // Adds frames [first, first + count) (host memory for cpu, device memory for cuda; cuda: asynchronous on
  // `stream`). Frames may come in any batches, each position once.
  void add(const void* frames, std::size_t first, std::size_t count, CUstream_st* stream = nullptr);
  // cuda: whether add_with_binned takes this basis's frames together with a scan-binned copy at bin b (8/16-bit
  // counts, few enough shells for b x b frames' histograms in a block).
  bool builds_with_binned(std::size_t b) const;
  // cuda: add() of frames [first, first + count) and, in the same pass over them, the scan-binned copy's
  // accumulation into `a` (ScanBinnedBuilder::add; basis::cuda::build_with_binned).
  void add_with_binned(const void* frames, std::size_t first, std::size_t count,
                       const basis::cuda::BinnedAccumulator& a, CUstream_st* stream);
  // After the last add: waits for the build (cuda) and checks that no value overflowed; false (and reason()) when
  // the basis cannot be used.
  bool finish();
  bool usable() const { return usable_; }
  const std::string& reason() const { return reason_; }

  Backend backend() const { return backend_; }
  const Shape4D& shape() const { return shape_; }
  double center_row() const { return cr_; }
  double center_col() const { return cc_; }
  std::uint32_t boundaries() const { return K_; }  // K
  std::size_t bytes() const;                       // the prefix images and the shell map
  const std::vector<std::uint16_t>& shell_of() const { return shell_; }  // per detector pixel, 0..K-1

  // Shell ranges [a, b) (0-based shells) whose union is the mask: every weight 0 or 1 and every shell wholly in or
  // out; nullopt otherwise (the caller decodes). weights: det_rows * det_cols values.
  using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  std::optional<Ranges> match(const std::vector<std::uint32_t>& weights) const;
  std::optional<Ranges> match(const std::uint8_t* mask) const;  // nullptr: the whole detector
  // Quantity q summed over the ranges' pixels, per scan position (both backends; a host vector). scan_bin b > 1
  // (a divisor of both scan dimensions, else InvalidArgument): summed over b x b blocks of scan positions as well,
  // (scan_rows / b) x (scan_cols / b) values (cuda: binned on the GPU, only those come to the host).
  std::vector<std::uint64_t> sums(const Ranges& ranges, int q, std::size_t scan_bin = 1) const;
  // cuda: the same into device memory d_out (frames / b^2 uint64), asynchronous on `stream`.
  void sums_device(const Ranges& ranges, int q, std::uint64_t* d_out, CUstream_st* stream,
                   std::size_t scan_bin = 1) const;
  // The radii of ranges: [[a, b], ...] meaning a < distance <= b around the centre (a = 0: the disk).
  static nlohmann::json radii_json(const Ranges& ranges);
  // centre, boundaries, bytes, element type, usable / reason: for describe() and provenance.
  nlohmann::json describe() const;

 private:
  struct Device;
  Shape4D shape_;
  DType dtype_;
  Backend backend_;
  double cr_, cc_;
  std::uint32_t K_ = 0;
  std::size_t frames_ = 0;
  std::vector<std::uint16_t> shell_;
  std::vector<std::uint32_t> host_;  // cpu: [q][k][frame]
  std::unique_ptr<Device> dev_;      // cuda
  bool usable_ = true;
  std::string reason_;
};

}  // namespace qgpu
