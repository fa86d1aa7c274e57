#include "resident/binned/scan_binned.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "resident/basis/cuda/radial_basis_kernels.hpp"
#include "resident/basis/radial_basis.hpp"
#include "resident/binned/cuda/scan_bin_kernels.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"

namespace qgpu {

namespace {

constexpr std::size_t kAccumulatorBytes = std::size_t(512) << 20;  // rows beyond the first, up to this

// The cpu accumulation: kernel-for-kernel the same rule as binned::cuda::accumulate.
template <class T>
bool accumulate_host(const T* frames, std::size_t first, std::size_t end, std::size_t cols, std::size_t b,
                     std::size_t P, std::size_t row0, std::uint32_t* acc) {
  const std::size_t rowlen = cols * b, r_lo = first / rowlen, r_hi = (end - 1) / rowlen, ocols = cols / b;
  std::atomic<bool> over{false};
  parallel_for((r_hi - r_lo + 1) * ocols, [&](std::size_t o) {
    const std::size_t R = r_lo + o / ocols, C = o % ocols;
    std::vector<std::uint64_t> s(P, 0);
    bool any = false;
    for (std::size_t dr = 0; dr < b; ++dr)
      for (std::size_t dc = 0; dc < b; ++dc) {
        const std::size_t g = (R * b + dr) * cols + C * b + dc;
        if (g < first || g >= end) continue;
        any = true;
        const T* f = frames + (g - first) * P;
        for (std::size_t p = 0; p < P; ++p) s[p] += f[p];
      }
    if (!any) return;
    std::uint32_t* dst = acc + ((R - row0) * ocols + C) * P;
    const bool fresh = (R * b) * cols + C * b >= first;
    for (std::size_t p = 0; p < P; ++p) {
      const std::uint64_t t = s[p] + (fresh ? 0 : dst[p]);
      if (t > 0xFFFFFFFFull) over = true;
      dst[p] = static_cast<std::uint32_t>(t);
    }
  });
  return over;
}

}  // namespace

std::size_t scan_binned_estimate(std::size_t encoded_estimate, std::size_t b) {
  if (b < 3) return encoded_estimate;
  return encoded_estimate / (b * b) * 8;
}

ScanBinnedBuilder::ScanBinnedBuilder(const Shape4D& shape, DType dtype, Backend backend, std::size_t b,
                                     encoded::Policy policy)
    : shape_(shape), dtype_(dtype), backend_(backend), b_(b) {
  if (dtype != DType::u8 && dtype != DType::u16 && dtype != DType::u32)
    throw InvalidArgument("scan-binned copy: counts of dtype " + dtype_name(dtype) + " (uint8/16/32 only)");
  if (backend != Backend::cpu && backend != Backend::cuda)
    throw InvalidArgument("scan-binned copy: backend " + backend_name(backend) + " (cpu or cuda only)");
  if (b < 2) throw InvalidArgument("scan-binned copy: bin " + std::to_string(b) + " (2 or more)");
  check_scan_bin(shape, b);
  const Shape4D out{shape.scan_rows / b, shape.scan_cols / b, shape.det_rows, shape.det_cols};
  const std::size_t row_bytes = checked_mul<InvalidArgument>(
      checked_mul<InvalidArgument>(out.scan_cols, out.frame_pixels(), "scan-binned row"), sizeof(std::uint32_t),
      "scan-binned row bytes");
  rows_ = std::clamp<std::size_t>(kAccumulatorBytes / std::max<std::size_t>(row_bytes, 1), 1, out.scan_rows);
  out_ = std::make_shared<EncodedResident>(out, DType::u32, backend, encoded::kDefaultTile, policy);
  if (backend == Backend::cpu) {
    host_acc_.assign(rows_ * row_bytes / sizeof(std::uint32_t), 0);
  } else {
    acc_ = std::make_unique<DeviceBuffer>(rows_ * row_bytes);
    totals_ = std::make_unique<DeviceBuffer>(rows_ * out.scan_cols * sizeof(unsigned long long));
    overflow_ = std::make_unique<DeviceBuffer>(sizeof(int));
    QGPU_CUDA(cudaMemset(overflow_->data(), 0, sizeof(int)));
    QGPU_CUDA(cudaDeviceSynchronize());  // before the loader's stream writes into it
  }
}

ScanBinnedBuilder::~ScanBinnedBuilder() {
  if (acc_) cudaDeviceSynchronize();  // no kernel of a failed load still writing into the accumulator
}

void ScanBinnedBuilder::add(const void* frames, std::size_t first, std::size_t count, CUstream_st* stream,
                            RadialBasis* with) {
  if (!usable_ || count == 0) return;
  const std::size_t cols = shape_.scan_cols, rowlen = cols * b_, ocols = cols / b_, P = shape_.frame_pixels();
  const std::size_t fb = P * dtype_size(dtype_), row_values = ocols * P;
  if (first != next_)
    throw InvalidArgument("scan-binned copy: frame " + std::to_string(first) + " added where " +
                          std::to_string(next_) + " comes next");
  next_ += count;
  const auto* src = static_cast<const std::uint8_t*>(frames);
  std::size_t done = 0;
  while (done < count) {
    const std::size_t g0 = first + done, g1 = std::min(first + count, (row0_ + rows_) * rowlen);
    if (backend_ == Backend::cpu) {
      bool over = false;
      switch (dtype_) {
        case DType::u8: over = accumulate_host(reinterpret_cast<const std::uint8_t*>(src + done * fb), g0, g1, cols, b_, P, row0_, host_acc_.data()); break;
        case DType::u16: over = accumulate_host(reinterpret_cast<const std::uint16_t*>(src + done * fb), g0, g1, cols, b_, P, row0_, host_acc_.data()); break;
        default: over = accumulate_host(reinterpret_cast<const std::uint32_t*>(src + done * fb), g0, g1, cols, b_, P, row0_, host_acc_.data()); break;
      }
      if (over) {
        usable_ = false;
        reason_ = "a binned sum exceeds uint32 (counts too high for the scan-binned copy at bin " +
                  std::to_string(b_) + ")";
        out_.reset();
        host_acc_ = {};
        return;
      }
    } else {
      given_totals_ = given_totals_ && with;
      if (with)
        with->add_with_binned(src + done * fb, g0, g1 - g0,
                              {cols, b_, row0_, acc_->as<std::uint32_t>(), overflow_->as<int>(),
                               totals_->as<unsigned long long>()},
                              stream);
      else
        binned::cuda::accumulate(src + done * fb, dtype_, g0, g1, cols, b_, P, row0_, acc_->as<std::uint32_t>(),
                                 overflow_->as<int>(), stream);
    }
    done += g1 - g0;
    const std::size_t complete = g1 / rowlen;  // binned rows with every input in
    if (complete > row0_) {
      const std::size_t n = complete - row0_;
      if (backend_ == Backend::cpu) {
        out_->append(host_acc_.data(), n * ocols);
        if (g1 % rowlen) std::copy_n(host_acc_.data() + n * row_values, row_values, host_acc_.data());
      } else {
        auto* const totals = totals_->as<unsigned long long>();
        out_->append(acc_->data(), n * ocols, stream, nullptr, given_totals_ ? totals : nullptr);
        if (g1 % rowlen) {  // the row in progress to the accumulator's first row (n >= 1: no overlap)
          QGPU_CUDA(cudaMemcpyAsync(acc_->as<std::uint32_t>(), acc_->as<std::uint32_t>() + n * row_values,
                                    row_values * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, stream));
          QGPU_CUDA(cudaMemcpyAsync(totals, totals + n * ocols, ocols * sizeof(unsigned long long),
                                    cudaMemcpyDeviceToDevice, stream));
        }
      }
      row0_ = complete;
    }
  }
  if (backend_ == Backend::cuda) sleep_until_done(stream);  // frames read: the caller may reuse them
}

bool ScanBinnedBuilder::finish() {
  if (finished_) return usable_;
  finished_ = true;
  if (usable_ && backend_ == Backend::cuda) {
    int overflow = 0;
    QGPU_CUDA(cudaDeviceSynchronize());
    overflow_->download(&overflow, sizeof(int));
    if (overflow) {
      usable_ = false;
      reason_ = "a binned sum exceeds uint32 (counts too high for the scan-binned copy at bin " + std::to_string(b_) +
                ")";
    }
  }
  if (usable_ && !out_->complete()) {
    usable_ = false;
    reason_ = "not every frame was appended";
  }
  if (!usable_) out_.reset();
  host_acc_ = {};
  acc_.reset();
  totals_.reset();
  overflow_.reset();
  return usable_;
}

bool ScanBinnedBuilder::verify(const std::vector<std::uint64_t>& sum_pattern,
                               std::vector<std::uint64_t> frame_totals, const RadialBasis* basis) {
  if (!finished_ || !usable_) return false;
  if (out_->sum_pattern() != sum_pattern) return settle("its per-pixel totals differ from the resident's", basis);
  if (frame_totals.size() != shape_.frames() ||
      out_->frame_totals() != bin_scan_sums(std::move(frame_totals), shape_.scan_rows, shape_.scan_cols, b_))
    return settle("its frame totals differ from the resident's binned", basis);
  return settle("", basis);
}

bool ScanBinnedBuilder::verify(const std::vector<std::uint64_t>& sum_pattern, const EncodedResident& full,
                               const RadialBasis* basis) {
  if (!finished_ || !usable_) return false;
  if (backend_ != Backend::cuda || full.backend() != Backend::cuda || full.shape() != shape_)
    return verify(sum_pattern, full.frame_totals(), basis);
  if (out_->sum_pattern() != sum_pattern) return settle("its per-pixel totals differ from the resident's", basis);
  if (!binned::cuda::binned_totals_equal(full.device_frame_totals(), shape_.scan_rows, shape_.scan_cols, b_,
                                         out_->device_frame_totals(), nullptr))
    return settle("its frame totals differ from the resident's binned", basis);
  return settle("", basis);
}

bool ScanBinnedBuilder::settle(const std::string& why, const RadialBasis* basis) {
  if (why.empty()) {
    // Its moment totals now (from the basis's whole-detector images, or one decode of its streams): an off-centre
    // CoM on it is then the totals minus a cheap complement from the first drag on (EncodedResident::moment_sums).
    if (basis && basis->usable())
      out_->prepare_moments(*basis, b_);
    else
      out_->prepare_moments();
    return true;
  }
  usable_ = false;
  reason_ = "self-check failed: " + why;
  out_.reset();
  return false;
}

std::shared_ptr<EncodedResident> ScanBinnedBuilder::resident() const {
  return finished_ && usable_ ? out_ : nullptr;
}

nlohmann::json ScanBinnedBuilder::describe() const {
  nlohmann::json j = {{"bin", b_},
                      {"shape", {shape_.scan_rows / b_, shape_.scan_cols / b_, shape_.det_rows, shape_.det_cols}},
                      {"dtype", "uint32"},
                      {"built", finished_ && usable_}};
  if (finished_ && usable_) j["resident_bytes"] = out_->resident_bytes();
  if (!usable_) j["reason"] = reason_;
  return j;
}

}  // namespace qgpu
