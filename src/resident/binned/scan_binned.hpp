#pragma once
// A scan-binned copy of an encoded resident, built while it loads: the exact sums of b x b blocks of scan positions,
// frame by frame (uint32), kept as an encoded resident of (scan_rows / b) x (scan_cols / b) positions. A query asked
// at a scan bin that b divides (the viewer's display bin of a large scan) decodes this copy, b^2 fewer frames, and
// gets the same integers as the full-resolution answer binned: any mask, centred or not (the radial basis answers
// centred shells only). docs/design.md "Scan-binned copy".
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "device/device.hpp"
#include "resident/encoded/format.hpp"
#include "resident/shape.hpp"

struct CUstream_st;

namespace qgpu {

class EncodedResident;
class RadialBasis;
class DeviceBuffer;

// What a load asks for (LoadOptions::scan_binned, EncodedResident::request_scan_binned).
struct ScanBinnedRequest {
  std::size_t bin = 0;    // b >= 2 dividing both scan sides; 0: no copy
  bool required = false;  // true: failing to build it (memory, a sum beyond uint32) is an error, not a reported skip
};

// Bytes a copy at bin b may take, given the conservative estimate of the full encoded resident: that estimate x
// min(1, 8 / b^2) (b^2 fewer frames whose values need more bits: at most about twice the nonzeros' bits at b = 4).
std::size_t scan_binned_estimate(std::size_t encoded_estimate, std::size_t b);

// Builds the copy from frames appended in flat scan order (any batch sizes): an accumulator of whole binned rows
// (at least one, up to ~512 MiB) takes each batch's sums; completed rows are appended to the copy's encoder.
class ScanBinnedBuilder {
 public:
  // shape: the full scan's; b must divide both scan sides (InvalidArgument), dtype uint8/16/32.
  ScanBinnedBuilder(const Shape4D& shape, DType dtype, Backend backend, std::size_t b, encoded::Policy policy);
  ~ScanBinnedBuilder();
  ScanBinnedBuilder(const ScanBinnedBuilder&) = delete;
  ScanBinnedBuilder& operator=(const ScanBinnedBuilder&) = delete;

  // Frames [first, first + count) (host memory for cpu, device memory for cuda: asynchronous on `stream`, frames
  // read when it returns); frames come in order, each once. with: a radial basis of the same frames that builds
  // with this copy (RadialBasis::builds_with_binned(bin())): it takes them in the same pass (one read of each frame).
  void add(const void* frames, std::size_t first, std::size_t count, CUstream_st* stream,
           RadialBasis* with = nullptr);
  // After the last frame: false (and reason()) when a sum passed uint32; the copy is then dropped.
  bool finish();
  // A check of the finished copy against what the full resident's own encoder counted: its per-pixel totals must
  // equal `sum_pattern` and each binned frame's total the b x b block sum of `frame_totals` (the full scan's). False
  // (the copy dropped, reason() saying what differed) otherwise: never a wrong answer from a faulty copy. A passing
  // copy's moment totals are computed then: from `basis` (a usable radial basis of the full scan) when given,
  // else by one decode of its streams (EncodedResident::prepare_moments).
  bool verify(const std::vector<std::uint64_t>& sum_pattern, std::vector<std::uint64_t> frame_totals,
              const RadialBasis* basis = nullptr);
  // The same against `full`, the complete resident of the full scan (cuda: the frame totals compared on the device).
  bool verify(const std::vector<std::uint64_t>& sum_pattern, const EncodedResident& full,
              const RadialBasis* basis = nullptr);
  std::size_t bin() const { return b_; }
  bool usable() const { return usable_; }
  const std::string& reason() const { return reason_; }
  // The complete copy (nullptr before finish() or when unusable).
  std::shared_ptr<EncodedResident> resident() const;
  nlohmann::json describe() const;  // bin, shape, resident bytes, usable / reason

 private:
  bool settle(const std::string& why, const RadialBasis* basis);  // verify's verdict: kept (why empty) or dropped
  Shape4D shape_;
  DType dtype_;
  Backend backend_;
  std::size_t b_, rows_ = 1, row0_ = 0, next_ = 0;  // accumulator rows; the binned row in its first; next frame
  std::shared_ptr<EncodedResident> out_;
  std::vector<std::uint32_t> host_acc_;     // cpu
  std::unique_ptr<DeviceBuffer> acc_, overflow_;  // cuda
  // cuda: the accumulator frames' totals, summed by the one-pass build (every add so far through it: given_totals_)
  std::unique_ptr<DeviceBuffer> totals_;
  bool given_totals_ = true;
  bool usable_ = true, finished_ = false;
  std::string reason_;
};

}  // namespace qgpu
