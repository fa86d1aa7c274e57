#include "resident/basis/radial_basis.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/result_memory.hpp"
#include "core/parallel_for.hpp"
#include "core/stage_timing.hpp"
#include "resident/scan_bin.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "resident/basis/cuda/radial_basis_kernels.hpp"

namespace qgpu {

struct RadialBasis::Device {
  std::shared_ptr<DeviceBuffer> prefix, shell, overflow;
};

namespace {

// Shell of each pixel (0-based: the smallest k >= 1 with d2 <= k^2, minus 1), d2 exactly as detector/mask.cpp.
std::vector<std::uint16_t> shells(std::size_t rows, std::size_t cols, double cr, double cc, std::uint32_t& K) {
  if (!std::isfinite(cr) || !std::isfinite(cc))
    throw InvalidArgument("radial basis: the centre (" + std::to_string(cr) + ", " + std::to_string(cc) +
                          ") is not finite");
  std::vector<std::uint16_t> out(rows * cols);
  K = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double dr = double(r) - cr, dc = double(c) - cc, d2 = dr * dr + dc * dc;
      double k = std::max(1.0, std::ceil(std::sqrt(d2)));
      while (k > 1 && d2 <= (k - 1) * (k - 1)) k -= 1;
      while (d2 > k * k) k += 1;
      if (k > RadialBasis::kMaxBoundaries)
        throw InvalidArgument("radial basis: detector pixel (" + std::to_string(r) + ", " + std::to_string(c) +
                              ") lies " + std::to_string(std::sqrt(d2)) + " px from the centre; at most " +
                              std::to_string(RadialBasis::kMaxBoundaries) + " shells");
      out[r * cols + c] = static_cast<std::uint16_t>(k - 1);
      K = std::max(K, static_cast<std::uint32_t>(k));
    }
  return out;
}

template <class T>
void build_host(const T* frames, std::size_t first, std::size_t count, std::size_t rows, std::size_t cols,
                const std::vector<std::uint16_t>& shell, std::uint32_t K, std::size_t total,
                std::vector<std::uint32_t>& prefix, std::size_t* overflow_frame) {
  std::vector<std::uint64_t> hist(3 * std::size_t(K));
  const std::size_t n = rows * cols;
  for (std::size_t f = 0; f < count; ++f) {
    std::fill(hist.begin(), hist.end(), 0);
    const T* frame = frames + f * n;
    for (std::size_t r = 0, p = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c, ++p) {
        const std::uint64_t v = frame[p];
        if (v == 0) continue;
        const std::size_t s = shell[p];
        hist[s] += v;
        hist[K + s] += v * r;
        hist[2 * K + s] += v * c;
      }
    for (std::size_t q = 0; q < 3; ++q) {
      std::uint64_t run = 0;
      for (std::size_t k = 0; k < K; ++k) {
        run += hist[q * K + k];
        if (run > 0xFFFFFFFFull && *overflow_frame == SIZE_MAX) *overflow_frame = first + f;
        prefix[(q * K + k) * total + first + f] = static_cast<std::uint32_t>(run);
      }
    }
  }
}

template <class F>
void by_count_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::u8: f(std::uint8_t{}); break;
    case DType::u16: f(std::uint16_t{}); break;
    case DType::u32: f(std::uint32_t{}); break;
    default: throw InvalidArgument("radial basis: counts of dtype " + dtype_name(dtype) + " (uint8/16/32 only)");
  }
}

}  // namespace

std::size_t RadialBasis::bytes_for(const Shape4D& shape, double cr, double cc) {
  std::uint32_t K = 0;
  shells(shape.det_rows, shape.det_cols, cr, cc, K);
  const std::uint64_t frames = checked_mul<InvalidArgument>(shape.scan_rows, shape.scan_cols, "radial basis frames");
  return checked_mul<InvalidArgument>(checked_mul<InvalidArgument>(frames, std::uint64_t(3) * K, "radial basis size"),
                                      sizeof(std::uint32_t), "radial basis bytes");
}

RadialBasis::RadialBasis(const Shape4D& shape, DType dtype, Backend backend, double cr, double cc)
    : shape_(shape), dtype_(dtype), backend_(backend), cr_(cr), cc_(cc) {
  by_count_dtype(dtype, [](auto) {});
  if (backend != Backend::cpu && backend != Backend::cuda)
    throw InvalidArgument("radial basis: backend " + backend_name(backend) + " (cpu or cuda only)");
  shell_ = shells(shape.det_rows, shape.det_cols, cr, cc, K_);
  frames_ = shape.scan_rows * shape.scan_cols;
  const std::size_t bytes = bytes_for(shape, cr, cc);
  if (backend == Backend::cpu) {
    host_.assign(bytes / sizeof(std::uint32_t), 0);
  } else {
    dev_ = std::make_unique<Device>();
    dev_->prefix = std::make_shared<DeviceBuffer>(bytes);
    dev_->shell = std::make_shared<DeviceBuffer>(shell_.size() * sizeof(std::uint16_t));
    dev_->shell->upload(shell_.data(), shell_.size() * sizeof(std::uint16_t));
    dev_->overflow = std::make_shared<DeviceBuffer>(sizeof(int));
    QGPU_CUDA(cudaMemset(dev_->overflow->data(), 0, sizeof(int)));
    QGPU_CUDA(cudaMemset(dev_->prefix->data(), 0, bytes));
    QGPU_CUDA(cudaDeviceSynchronize());  // before the loader's stream writes into them
  }
}

RadialBasis::~RadialBasis() = default;

std::vector<std::uint64_t> RadialBasis::batch_sum_pattern(const Shape4D& shape, DType dtype, Backend backend,
                                                          const void* frames, std::size_t count, CUstream_st* stream) {
  const std::size_t n = shape.det_rows * shape.det_cols;
  std::vector<std::uint64_t> out(n, 0);
  if (backend == Backend::cpu) {
    by_count_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      const T* f = static_cast<const T*>(frames);
      for (std::size_t i = 0; i < count; ++i)
        for (std::size_t p = 0; p < n; ++p) out[p] += f[i * n + p];
    });
  } else {
    LeasedBuffer d(n * sizeof(std::uint64_t));
    basis::cuda::sum_pattern(frames, dtype, count, n, d.as<std::uint64_t>(), stream);
    QGPU_CUDA(cudaMemcpyAsync(out.data(), d.data(), n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream));
    QGPU_CUDA(cudaStreamSynchronize(stream));
  }
  return out;
}

void RadialBasis::add(const void* frames, std::size_t first, std::size_t count, CUstream_st* stream) {
  if (first > frames_ || count > frames_ - first)
    throw InvalidArgument("radial basis: frames " + std::to_string(first) + "+" + std::to_string(count) +
                          " outside the " + std::to_string(frames_) + " scan positions");
  if (!usable_ || count == 0) return;
  if (backend_ == Backend::cpu) {
    std::size_t overflow = SIZE_MAX;
    by_count_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      build_host(static_cast<const T*>(frames), first, count, shape_.det_rows, shape_.det_cols, shell_, K_, frames_,
                 host_, &overflow);
    });
    if (overflow != SIZE_MAX) {
      usable_ = false;
      reason_ = "a sum of frame " + std::to_string(overflow) + " exceeds uint32 (counts too high for the basis)";
      host_ = {};
    }
  } else {
    basis::cuda::build(frames, dtype_, first, count, shape_.det_rows * shape_.det_cols, shape_.det_cols,
                       dev_->shell->as<std::uint16_t>(), K_, frames_, dev_->prefix->as<std::uint32_t>(),
                       dev_->overflow->as<int>(), stream);
  }
}

bool RadialBasis::builds_with_binned(std::size_t b) const {
  return backend_ == Backend::cuda && usable_ && basis::cuda::fits_with_binned(dtype_, K_, b);
}

void RadialBasis::add_with_binned(const void* frames, std::size_t first, std::size_t count,
                                  const basis::cuda::BinnedAccumulator& a, CUstream_st* stream) {
  if (first > frames_ || count > frames_ - first)
    throw InvalidArgument("radial basis: frames " + std::to_string(first) + "+" + std::to_string(count) +
                          " outside the " + std::to_string(frames_) + " scan positions");
  if (!builds_with_binned(a.bin)) throw InvalidArgument("radial basis: no build with a scan-binned copy here");
  basis::cuda::build_with_binned(frames, dtype_, first, count, shape_.det_rows * shape_.det_cols, shape_.det_cols,
                                 dev_->shell->as<std::uint16_t>(), K_, frames_, dev_->prefix->as<std::uint32_t>(),
                                 dev_->overflow->as<int>(), a, stream);
}

bool RadialBasis::finish() {
  if (backend_ == Backend::cuda && usable_) {
    int overflow = 0;
    QGPU_CUDA(cudaDeviceSynchronize());
    dev_->overflow->download(&overflow, sizeof(int));
    if (overflow) {
      usable_ = false;
      reason_ = "a frame's sum exceeds uint32 (counts too high for the basis)";
      dev_->prefix.reset();
    }
  }
  return usable_;
}

std::size_t RadialBasis::bytes() const {
  if (!usable_) return 0;
  return frames_ * 3 * std::size_t(K_) * sizeof(std::uint32_t) + shell_.size() * sizeof(std::uint16_t);
}

std::optional<RadialBasis::Ranges> RadialBasis::match(const std::vector<std::uint32_t>& weights) const {
  if (weights.size() != shell_.size()) return std::nullopt;
  for (std::uint32_t w : weights)
    if (w > 1) return std::nullopt;
  std::vector<std::uint8_t> m(weights.begin(), weights.end());
  return match(m.data());
}

std::optional<RadialBasis::Ranges> RadialBasis::match(const std::uint8_t* mask) const {
  if (!usable_) return std::nullopt;
  if (!mask) return Ranges{{0, K_}};
  std::vector<std::int8_t> state(K_, -1);  // -1: no pixel seen, else 0/1
  for (std::size_t p = 0; p < shell_.size(); ++p) {
    if (mask[p] > 1) return std::nullopt;
    std::int8_t& s = state[shell_[p]];
    if (s < 0) s = std::int8_t(mask[p]);
    else if (s != mask[p]) return std::nullopt;  // a shell partly in: not a union of shells
  }
  Ranges r;
  std::int8_t prev = 0;
  for (std::uint32_t k = 0; k < K_; ++k) {
    const std::int8_t s = state[k] < 0 ? prev : state[k];  // an empty shell adds nothing: joins its neighbour
    if (s && !prev) r.push_back({k, k + 1});
    else if (s) r.back().second = k + 1;
    prev = s;
  }
  if (r.empty() || r.size() > std::size_t(basis::cuda::kMaxRanges)) return std::nullopt;
  return r;
}

std::vector<std::uint64_t> RadialBasis::sums(const Ranges& ranges, int q, std::size_t scan_bin) const {
  if (!usable_) throw Error("radial basis: not usable (" + reason_ + ")");
  if (q < 0 || q >= kQuantities) throw InvalidArgument("radial basis: quantity " + std::to_string(q));
  check_scan_bin(shape_, scan_bin);
  const std::size_t n = frames_ / (scan_bin * scan_bin);
  if (backend_ == Backend::cpu) {
    std::vector<std::uint64_t> out = fresh_vector<std::uint64_t>(frames_);
    const std::uint32_t* P = host_.data() + std::size_t(q) * K_ * frames_;
    parallel_blocks(frames_, kHostBlock, [&](std::size_t f0, std::size_t f1) {  // each block on one core
      for (std::size_t f = f0; f < f1; ++f) out[f] = 0;
      for (const auto& [lo, hi] : ranges) {
        const std::uint32_t* top = P + std::size_t(hi - 1) * frames_;
        for (std::size_t f = f0; f < f1; ++f) out[f] += top[f];
        if (lo > 0) {
          const std::uint32_t* bottom = P + std::size_t(lo - 1) * frames_;
          for (std::size_t f = f0; f < f1; ++f) out[f] -= bottom[f];
        }
      }
    });
    return bin_scan_sums(std::move(out), shape_.scan_rows, shape_.scan_cols, scan_bin);
  }
  LeasedBuffer d(n * sizeof(std::uint64_t));
  sums_device(ranges, q, d.as<std::uint64_t>(), nullptr, scan_bin);
  std::vector<std::uint64_t> out;
  {
    const timing::Stage stage("host");  // the result's memory (a recycled one's pages are present), beside the kernel
    out = result_vector<std::uint64_t>(n);
  }
  const timing::Stage stage("transfer");  // (waits for the sums kernel first)
  // Through the shared download (pinned bounce buffers on several threads from 2 MiB on): a single pageable copy
  // moved the 33.5 MB of a 2048x2048 scan at a few GB/s, most of a centred BF's 23 ms on the H200 (s14b).
  d.buffer().download(out.data(), n * sizeof(std::uint64_t));
  return out;
}

void RadialBasis::sums_device(const Ranges& ranges, int q, std::uint64_t* d_out, CUstream_st* stream,
                              std::size_t scan_bin) const {
  if (backend_ != Backend::cuda || !usable_) throw Error("radial basis: sums_device needs a usable cuda basis");
  if (ranges.empty() || ranges.size() > std::size_t(basis::cuda::kMaxRanges))
    throw InvalidArgument("radial basis: " + std::to_string(ranges.size()) + " shell ranges");
  check_scan_bin(shape_, scan_bin);
  basis::cuda::RangeList l;
  l.n = static_cast<int>(ranges.size());
  for (int i = 0; i < l.n; ++i) {
    l.lo[i] = ranges[i].first;
    l.hi[i] = ranges[i].second;
  }
  basis::cuda::range_sums(dev_->prefix->as<std::uint32_t>() + std::size_t(q) * K_ * frames_, shape_.scan_rows,
                          shape_.scan_cols, scan_bin, l, d_out, stream);
}

nlohmann::json RadialBasis::radii_json(const Ranges& ranges) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [lo, hi] : ranges) j.push_back({lo, hi});
  return j;
}

nlohmann::json RadialBasis::describe() const {
  nlohmann::json j = {{"center", {cr_, cc_}},
                      {"boundaries", K_},
                      {"radii", "integer radii 1.." + std::to_string(K_) + " px (disk: distance <= k)"},
                      {"element", "uint32"},
                      {"quantities", {"counts", "counts x det_row", "counts x det_col"}},
                      {"usable", usable_},
                      {"bytes", bytes()}};
  if (!usable_) j["reason"] = reason_;
  return j;
}

}  // namespace qgpu
